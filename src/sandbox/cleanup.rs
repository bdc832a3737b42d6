//! What must not outlive aayu when it is interrupted (Ctrl-C, or the runner's SIGTERM on cancel): the
//! processes of the sandbox and the temporary folders (the base checkout of red-on-base, the run folder).
//! Normal ends clean up through `Drop`; a signal would skip every destructor, so the places to clean are
//! also registered here, and a signal thread cleans them before aayu exits with 128 + the signal.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use super::procs::{self, Owner};

#[derive(Debug, Clone)]
enum Item {
    Dir(PathBuf),
    /// A file aayu created in a tree (a lock file resolved for the run): the tree and the path in it.
    File(PathBuf, String),
    Processes(Owner),
}

static REGISTRY: Mutex<BTreeMap<u64, Item>> = Mutex::new(BTreeMap::new());
static NEXT: Mutex<u64> = Mutex::new(0);
static INSTALLED: OnceLock<()> = OnceLock::new();
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a signal arrived: then nothing more is written as if the run had completed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Unregisters its item when dropped (the normal end has cleaned it up itself).
#[must_use]
pub struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        if let Ok(mut registry) = REGISTRY.lock() {
            registry.remove(&self.0);
        }
    }
}

fn register(item: Item) -> Registered {
    install();
    let id = NEXT.lock().map_or(0, |mut n| {
        *n += 1;
        *n
    });
    if let Ok(mut registry) = REGISTRY.lock() {
        registry.insert(id, item);
    }
    Registered(id)
}

/// A temporary folder to remove if aayu is interrupted.
pub fn dir(path: impl Into<PathBuf>) -> Registered {
    register(Item::Dir(path.into()))
}

/// A file aayu created in `root` to remove if aayu is interrupted (without following a link on the way).
pub fn file(root: impl Into<PathBuf>, rel: &str) -> Registered {
    register(Item::File(root.into(), rel.to_string()))
}

/// Processes to kill if aayu is interrupted.
pub fn processes(owner: Owner) -> Registered {
    register(Item::Processes(owner))
}

/// Starts the signal thread once. `aayu action` calls it first thing: as a container's PID 1 it would
/// otherwise ignore SIGINT and SIGTERM until something is registered.
pub fn install() {
    INSTALLED.get_or_init(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
        ]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
                clean_all();
                std::process::exit(128 + signal);
            }
        });
    });
}

/// Cleans up everything registered now, as a signal would (`aayu mcp` when its client leaves during a
/// call): the call's processes are killed and its folders removed.
pub fn now() {
    clean_all();
}

/// Kills every registered process first (nothing may still write into a folder being removed), then
/// removes the folders.
fn clean_all() {
    let items: Vec<Item> = REGISTRY
        .lock()
        .map(|r| r.values().cloned().collect())
        .unwrap_or_default();
    for item in &items {
        if let Item::Processes(owner) = item {
            procs::kill_all(owner, None);
        }
    }
    for item in &items {
        match item {
            Item::Dir(path) => {
                let _ = std::fs::remove_dir_all(path);
            }
            Item::File(root, rel) => {
                let _ = crate::safe_fs::remove(root, rel);
            }
            Item::Processes(_) => {}
        }
    }
}
