//! The one place with `unsafe`: the steps a sandboxed child takes between `fork` and `exec`, and the
//! helper that kills every process of a slot uid at once.
//!
//! Only async-signal-safe system calls run here (the child of a multi-threaded process may not allocate
//! or take locks): each is a thin `nix` or `seccompiler` wrapper around one syscall.
#![allow(unsafe_code)]

use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sys::resource::{Resource, setrlimit};
use nix::sys::signal::{Signal, kill};
use nix::unistd::{Gid, Pid, Uid, setgid, setgroups, setsid, setuid};
use seccompiler::BpfProgram;

/// What the child does to itself before it runs product code.
pub struct Confinement {
    /// Drop to this uid and gid, with no supplementary groups (only when aayu runs as root).
    pub ids: Option<(u32, u32)>,
    /// The seccomp filter: socket families by allow-list, no io_uring, no x32 syscalls.
    pub filter: Option<BpfProgram>,
    /// The most processes the uid may have (`RLIMIT_NPROC`: counted per real uid).
    pub nproc: Option<u64>,
    /// The most data (heap and private writable mappings) one process may have, in bytes (`RLIMIT_DATA`,
    /// which leaves the large address-space reservations of Go, Node and Chromium alone).
    pub data: Option<u64>,
}

/// Product code runs at a lower priority than aayu, which watches it: a check that spins every CPU (a fork
/// bomb held at its process limit) cannot starve the watch that ends it.
const NICE: i32 = 10;

const CORE: u64 = 0;
const NOFILE: u64 = 4096;
const FSIZE: u64 = 8 << 30;

/// Arranges for `command`'s child to confine itself before `exec`.
pub fn confine(command: &mut Command, confinement: Confinement) {
    let hook = move || -> std::io::Result<()> {
        // A session of its own: the check's processes share a process group that can be killed whole.
        setsid()?;
        if let Some((uid, gid)) = confinement.ids {
            // Groups first (needs root), then the gid, then the uid, after which nothing can be regained.
            setgroups(&[])?;
            setgid(Gid::from_raw(gid))?;
            setuid(Uid::from_raw(uid))?;
        }
        // SAFETY: setpriority takes no pointer and touches no memory; it only lowers this process's own
        // priority, which needs no privilege.
        let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, NICE) };
        nix::sys::prctl::set_no_new_privs()?;
        setrlimit(Resource::RLIMIT_CORE, CORE, CORE)?;
        setrlimit(Resource::RLIMIT_NOFILE, NOFILE, NOFILE)?;
        setrlimit(Resource::RLIMIT_FSIZE, FSIZE, FSIZE)?;
        if let Some(nproc) = confinement.nproc {
            setrlimit(Resource::RLIMIT_NPROC, nproc, nproc)?;
        }
        if let Some(data) = confinement.data {
            setrlimit(Resource::RLIMIT_DATA, data, data)?;
        }
        if let Some(filter) = &confinement.filter {
            seccompiler::apply_filter(filter)
                .map_err(|_| std::io::Error::from_raw_os_error(libc::ENOSYS))?;
        }
        Ok(())
    };
    // SAFETY: the hook runs in the forked child before exec and calls only async-signal-safe syscalls
    // (setsid, setgroups with an empty list, setgid, setuid, prctl, setrlimit, seccomp); it allocates
    // nothing, takes no lock and touches no state shared with the parent's other threads.
    unsafe {
        command.pre_exec(hook);
    }
}

/// Sends SIGKILL to every process of `uid` at once: a child becomes that uid and calls `kill(-1)`, which
/// signals every process the caller may signal but itself — so a process of the uid that forks while it is
/// being killed cannot slip between a scan and a kill. The child never execs. Only as root.
///
/// A bare `fork`, not `std::process::Command`: the child is a process of `uid` whose parent is aayu, so a
/// kill of the same uid running at the same time (an interrupt's cleanup beside a check's end) may reap
/// it, and `Command::spawn` panics when the child it waits for was reaped by someone else.
pub fn kill_every_process_of(uid: u32) {
    // SAFETY: the child calls only async-signal-safe syscalls (setgroups with an empty list, setgid,
    // setuid, kill, _exit), allocates nothing, takes no lock and never returns into Rust code.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            if setgroups(&[]).is_ok()
                && setgid(Gid::from_raw(uid)).is_ok()
                && setuid(Uid::from_raw(uid)).is_ok()
            {
                let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
            }
            // SAFETY: ends the forked child at once, without running anything of the parent's.
            unsafe { libc::_exit(0) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            // Reaped here, or by a concurrent kill of the same uid: either way it is gone.
            let _ = nix::sys::wait::waitpid(child, None);
        }
        Err(_) => {}
    }
}

/// Why this process may not make a user namespace (the kernel's `unshare(CLONE_NEWUSER)` error), or `None`
/// when it may: a child tries and never execs. Chromium's own sandbox needs one.
pub fn user_namespace_denied() -> Option<std::io::Error> {
    let mut command = Command::new("/");
    let hook = || -> std::io::Result<()> {
        match nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER) {
            // Not an error: ends the child here, before any exec, as spawn reports a hook's error.
            Ok(()) => Err(std::io::Error::from_raw_os_error(libc::ECANCELED)),
            Err(errno) => Err(std::io::Error::from_raw_os_error(errno as i32)),
        }
    };
    // SAFETY: the hook makes one async-signal-safe syscall (unshare), allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(hook);
    }
    match command.spawn() {
        Err(e) if e.raw_os_error() == Some(libc::ECANCELED) => None,
        Err(e) => Some(e),
        Ok(mut child) => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    }
}
