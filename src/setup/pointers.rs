//! The agent apps' pointers to the verify skills (`aayu install`): a Claude Code command per root
//! `verify-*` skill, one Cursor rule listing them; read back by `aayu doctor`.

/// A verify skill found in the repository.
pub struct Skill {
    /// `verify-<product>`.
    pub name: String,
    /// The skill's folder, relative to the repository root.
    pub dir: String,
    pub description: String,
    /// Whether it sits at the repository root (`.agents/skills/…`), not under a product folder.
    pub root: bool,
}

/// The `description` of a SKILL.md's (or a pointer's) frontmatter.
pub fn description_of(text: &str) -> Option<String> {
    description(text)
}

/// The verify skills of the repository, sorted by folder.
pub fn skills(root: &std::path::Path, files: &[String]) -> Vec<Skill> {
    let mut skills = Vec::new();
    for file in files.iter().filter(|f| crate::maps::is_map_path(f)) {
        // `<dir>/.agents/skills/verify-<product>/features/README.md`
        let Some(skill_dir) = file.strip_suffix("/features/README.md") else {
            continue;
        };
        let name = skill_dir.rsplit('/').next().unwrap_or_default().to_string();
        let text = crate::safe_fs::read(root, &format!("{skill_dir}/SKILL.md"), 1 << 20)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        skills.push(Skill {
            description: description(&text).unwrap_or_else(|| format!("The {name} skill.")),
            root: skill_dir == format!(".agents/skills/{name}"),
            name,
            dir: skill_dir.to_string(),
        });
    }
    skills.sort_by(|a, b| a.dir.cmp(&b.dir));
    skills
}

/// The Claude Code pointer of a root skill: its path and its text.
pub fn pointer(skill: &Skill) -> (String, String) {
    (
        format!(".claude/commands/aayudha/{}.md", skill.name),
        format!(
            "---\ndescription: {}\n---\n\nFollow the skill in `{}/SKILL.md` exactly: read it now, then do what it says for this repository. The feature map is in `{}/features/`. $ARGUMENTS\n",
            yaml_string(&skill.description),
            skill.dir,
            skill.dir
        ),
    )
}

/// Every root skill's pointer path, its SKILL.md and the description the pointer must carry, among the
/// repository's `files`.
pub fn pointers(root: &std::path::Path, files: &[String]) -> Vec<(String, String, String)> {
    skills(root, files)
        .iter()
        .filter(|s| s.root)
        .map(|s| {
            (
                pointer(s).0,
                format!("{}/SKILL.md", s.dir),
                s.description.clone(),
            )
        })
        .collect()
}

/// Why the pointers could not be written again.
#[derive(Debug, thiserror::Error)]
pub enum PointerError {
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
    #[error(transparent)]
    Write(#[from] crate::safe_fs::Refused),
}

/// Writes again every existing pointer whose text is not its skill's; how many were written.
pub fn write_pointers(root: &std::path::Path) -> Result<usize, PointerError> {
    let repo = crate::git::Repo::discover(root)?;
    let listed = repo.worktree_files()?;
    let mut written = 0;
    for skill in skills(root, &listed.files).iter().filter(|s| s.root) {
        let (path, text) = pointer(skill);
        match crate::safe_fs::read(root, &path, 1 << 20) {
            Ok(current) if current != text.as_bytes() => {
                crate::safe_fs::write(root, &path, text.as_bytes())?;
                written += 1;
            }
            _ => {}
        }
    }
    Ok(written)
}

/// The `description` of a SKILL.md's frontmatter (a plain or double-quoted YAML scalar).
fn description(text: &str) -> Option<String> {
    let front = text.strip_prefix("---\n")?;
    let end = front.find("\n---")?;
    front[..end].lines().find_map(|line| {
        let value = line.strip_prefix("description:")?.trim();
        let value = match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\\\"", "\"").replace("\\\\", "\\"),
            None => value.to_string(),
        };
        Some(value)
    })
}

/// A string as a YAML double-quoted scalar.
fn yaml_string(text: &str) -> String {
    let escaped: String = text
        .chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            '\n' | '\r' => vec![' '],
            c => vec![c],
        })
        .collect();
    format!("\"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_read_and_written_as_yaml() {
        let text = "---\nname: verify-x\ndescription: \"Keep \\\"x\\\" honest\"\n---\n# x\n";
        assert_eq!(description(text).as_deref(), Some("Keep \"x\" honest"));
        assert_eq!(yaml_string("a \"b\"\nc"), "\"a \\\"b\\\" c\"");
        assert_eq!(description("no frontmatter"), None);
    }
}
