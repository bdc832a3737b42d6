//! Finding, measuring and killing every process of a check through `/proc`: by uid (as root, each parallel
//! slot has a uid of its own), or by session, process group and parentage (without root, one check at a
//! time). A kill is checked, not hoped: what is still alive afterwards is reported.

use std::collections::BTreeSet;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// One line of `/proc/<pid>/stat` and `status`: what tells whose a process is, and what it uses.
#[derive(Debug, Clone, Copy)]
struct Proc {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    session: i32,
    uid: u32,
    zombie: bool,
    /// Resident anonymous memory, in KiB: what the process itself allocated (heap, stacks), not the
    /// libraries and files it shares with others, which a sum over processes would count many times.
    rss_kib: u64,
}

fn all() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read)
        .collect()
}

/// A file of `/proc`, read into a buffer big enough for it at once: a `/proc` file says it has no size,
/// so a read sized from it starts at 32 bytes and renders the file again for every doubling — eight times
/// per file, ten times a second for every process of the machine while a check runs.
fn read_proc(path: &str) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::with_capacity(8192);
    std::fs::File::open(path)
        .ok()?
        .read_to_end(&mut bytes)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// One read of `/proc/<pid>/status` (not `stat` as well: a fork bomb can make thousands of processes, and
/// the watch must stay quick while they take the CPU). The group and session are the ones of aayu's own
/// PID namespace (`NSpgid`, `NSsid`), as the pids are.
fn read(pid: i32) -> Option<Proc> {
    let status = read_proc(&format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
    };
    Some(Proc {
        pid,
        ppid: field("PPid:")?.parse().ok()?,
        pgrp: field("NSpgid:")?.parse().ok()?,
        session: field("NSsid:")?.parse().ok()?,
        uid: field("Uid:")?.parse().ok()?,
        zombie: field("State:") == Some("Z"),
        rss_kib: field("RssAnon:").and_then(|v| v.parse().ok()).unwrap_or(0),
    })
}

/// How many live processes other than this one share this process's session, when it leads its own (as
/// every sandboxed process does); 0 otherwise (a terminal's session is not ours to wait for). What a tool
/// that started helpers (a browser's zygotes and renderers) waits for before it ends.
pub fn others_in_my_session() -> usize {
    let me = std::process::id() as i32;
    let Some(mine) = read(me) else {
        return 0;
    };
    if mine.session != mine.pid {
        return 0;
    }
    all()
        .iter()
        .filter(|p| p.session == mine.session && p.pid != me && !p.zombie)
        .count()
}

/// Whose processes a check has.
#[derive(Debug, Clone)]
pub enum Owner {
    /// Every process running as this uid (a sandbox slot's own uid).
    Uid(u32),
    /// The session and process group led by this pid, and any orphan re-parented to aayu (the child
    /// subreaper) that is not one of `keep`.
    Tree { leader: i32, keep: BTreeSet<i32> },
}

impl Owner {
    fn owns(&self, p: &Proc, me: i32) -> bool {
        p.pid != me
            && match self {
                Owner::Uid(uid) => p.uid == *uid,
                Owner::Tree { leader, keep } => {
                    p.session == *leader
                        || p.pgrp == *leader
                        || (p.ppid == me && !keep.contains(&p.pid) && p.pid != *leader)
                }
            }
    }
}

/// What a check's processes use right now: how many are alive, and their resident anonymous memory
/// together.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub processes: usize,
    pub rss_bytes: u64,
}

/// Measures a check's processes while it runs, and reaps those of them that ended after being re-parented
/// to aayu (a zombie still counts against the uid's process limit). `child` is the check's own process,
/// which its handle waits for. The memory is each process's resident anonymous memory (`RssAnon`, read
/// with the rest of its status); only when those add up to more than `limit` bytes is each process's
/// share asked for (`Pss_Anon`, which is never more, and costs the kernel a walk of the process's page
/// tables — milliseconds for a compiler — ten times a second otherwise).
pub fn usage(owner: &Owner, child: Option<i32>, limit: u64) -> Usage {
    let me = std::process::id() as i32;
    let owned: Vec<Proc> = all().into_iter().filter(|p| owner.owns(p, me)).collect();
    reap(&owned, me, child);
    let live: Vec<&Proc> = owned.iter().filter(|p| !p.zombie).collect();
    let resident: u64 = live.iter().map(|p| p.rss_kib * 1024).sum();
    let rss_bytes = if resident > limit {
        live.iter()
            .map(|p| proportional_anon_kib(p.pid).unwrap_or(p.rss_kib) * 1024)
            .sum()
    } else {
        resident
    };
    Usage {
        processes: live.len(),
        rss_bytes,
    }
}

/// A process's share of the anonymous memory it maps (`Pss_Anon` of `smaps_rollup`): pages it shares with
/// its parent after a fork count once between them, not once each.
fn proportional_anon_kib(pid: i32) -> Option<u64> {
    let text = read_proc(&format!("/proc/{pid}/smaps_rollup"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("Pss_Anon:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How many processes this uid has now (every one, not just a check's).
pub fn count_of_uid(uid: u32) -> usize {
    all().iter().filter(|p| p.uid == uid && !p.zombie).count()
}

/// The end of a kill: the pids killed, and those still alive after every round.
#[derive(Debug, Default)]
pub struct Killed {
    pub killed: BTreeSet<i32>,
    pub survivors: Vec<i32>,
}

/// Kills every process of `owner` with SIGKILL until none is left (at most 50 rounds), reaping those that
/// were re-parented to aayu, except `child`, which its `std::process::Child` handle reaps. A slot uid's
/// processes are killed all at once (`kill(-1)` as that uid, at least once whatever a scan saw), so one
/// that forks cannot slip between a scan and a kill; a tree's are killed by pid, round after round.
///
/// Then it is checked: after a last reap, any process of the owner still alive is a survivor. A tree's
/// are looked at once more after a short wait: a process that keeps forking and exiting is never the same
/// pid at the next look, but leaves one alive or a zombie. A uid's need no wait: no fork completes once
/// `kill(-1)` has reached its parent, so nothing of the uid is started after it.
pub fn kill_all(owner: &Owner, child: Option<i32>) -> Killed {
    let me = std::process::id() as i32;
    let scan = || -> Vec<Proc> {
        all()
            .into_iter()
            .filter(|p| owner.owns(p, me) && Some(p.pid) != child)
            .collect()
    };
    let by_uid = matches!(owner, Owner::Uid(_));
    let mut killed = BTreeSet::new();
    for round in 0..50 {
        let owned = scan();
        reap(&owned, me, child);
        let live: Vec<&Proc> = owned.iter().filter(|p| !p.zombie).collect();
        // A uid's processes are killed once even when the scan saw none.
        if live.is_empty() && (round > 0 || !by_uid) {
            break;
        }
        if let Owner::Uid(uid) = owner {
            super::exec::kill_every_process_of(*uid);
        }
        for p in &live {
            let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
            killed.insert(p.pid);
        }
        // A killed process is gone in a moment: looked at again soon, then less often.
        std::thread::sleep(Duration::from_millis(if round < 5 { 1 } else { 10 }));
    }
    reap(&scan(), me, child);
    if !by_uid {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut left = scan();
    reap(&left, me, child);
    // A uid's last look, again for up to 50 ms while anything of it is still alive (a process killed a
    // moment ago may still be on its way out), killing again each time; nothing alive: no wait at all.
    if let Owner::Uid(uid) = owner {
        for _ in 0..50 {
            if left.iter().all(|p| p.zombie) {
                break;
            }
            super::exec::kill_every_process_of(*uid);
            std::thread::sleep(Duration::from_millis(1));
            left = scan();
            reap(&left, me, child);
        }
    }
    Killed {
        killed,
        survivors: left
            .iter()
            .filter(|p| !p.zombie || !by_uid)
            .map(|p| p.pid)
            .collect(),
    }
}

/// Reaps the check's processes that ended and were re-parented to aayu (the child subreaper), except
/// `child`, which its own handle waits for — never another check's.
fn reap(owned: &[Proc], me: i32, child: Option<i32>) {
    for p in owned
        .iter()
        .filter(|p| p.ppid == me && Some(p.pid) != child)
    {
        let _ = waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_can_be_read() {
        let me = read(std::process::id() as i32).expect("own stat");
        assert_eq!(me.pid, std::process::id() as i32);
        assert_eq!(me.uid, nix::unistd::getuid().as_raw());
        assert!(me.rss_kib > 0);
        assert!(!me.zombie);
    }
}
