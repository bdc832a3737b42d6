//! Finding and killing every process of a check through `/proc`: by uid (as root, each parallel slot has a
//! uid of its own), or by session, process group and parentage (without root, one check at a time).

use std::collections::BTreeSet;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// One line of `/proc/<pid>/stat` and `status`: what tells whose a process is.
#[derive(Debug, Clone, Copy)]
struct Proc {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    session: i32,
    uid: u32,
}

fn all() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read)
        .collect()
}

fn read(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields start after the last `)`.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(Proc {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        uid,
    })
}

/// Whose processes to kill.
#[derive(Debug, Clone)]
pub enum Owner {
    /// Every process running as this uid (a sandbox slot's own uid).
    Uid(u32),
    /// The session and process group led by this pid, and any orphan re-parented to aayu (the child
    /// subreaper) that is not one of `keep`.
    Tree { leader: i32, keep: BTreeSet<i32> },
}

/// Kills every process of `owner` with SIGKILL until none is left (bounded), reaping those that were
/// re-parented to aayu, except `child`, which its `std::process::Child` handle reaps. Returns the pids it
/// killed.
pub fn kill_all(owner: &Owner, child: Option<i32>) -> BTreeSet<i32> {
    let me = std::process::id() as i32;
    let mut killed = BTreeSet::new();
    for _ in 0..50 {
        let targets: Vec<Proc> = all()
            .into_iter()
            .filter(|p| p.pid != me)
            .filter(|p| match owner {
                Owner::Uid(uid) => p.uid == *uid,
                Owner::Tree { leader, keep } => {
                    p.session == *leader
                        || p.pgrp == *leader
                        || (p.ppid == me && !keep.contains(&p.pid) && p.pid != *leader)
                }
            })
            .collect();
        if targets.is_empty() {
            break;
        }
        for p in &targets {
            let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
            killed.insert(p.pid);
        }
        for p in targets
            .iter()
            .filter(|p| p.ppid == me && Some(p.pid) != child)
        {
            let _ = waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Orphans that died between the scans are still aayu's zombies: reap them.
    for pid in killed.iter().filter(|pid| Some(**pid) != child) {
        let _ = waitpid(Pid::from_raw(*pid), Some(WaitPidFlag::WNOHANG));
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_can_be_read() {
        let me = read(std::process::id() as i32).expect("own stat");
        assert_eq!(me.pid, std::process::id() as i32);
        assert_eq!(me.uid, nix::unistd::getuid().as_raw());
    }
}
