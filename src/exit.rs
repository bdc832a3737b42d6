//! The exit codes every command shares (SPEC §7), as one enum.

use std::process::ExitCode;

/// How a command ended. The numbers are a contract that users' scripts rely on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExitStatus {
    /// Everything asked for holds.
    Ok,
    /// Something unexpected failed: I/O, the network, a bug.
    Failure,
    /// A usage or contract error, or a registry command that is not built yet.
    Usage,
    /// A floor or a check does not hold (drift, a failed check).
    FloorFails,
    /// A proof does not verify, or nothing qualifies for ship.
    ProofFails,
}

impl ExitStatus {
    /// Every status, in code order: what the generated exit-code table lists.
    pub const ALL: [ExitStatus; 5] = [
        ExitStatus::Ok,
        ExitStatus::Failure,
        ExitStatus::Usage,
        ExitStatus::FloorFails,
        ExitStatus::ProofFails,
    ];

    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Ok => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::FloorFails => 3,
            ExitStatus::ProofFails => 4,
        }
    }

    /// One line for people: what the code means.
    pub fn meaning(self) -> &'static str {
        match self {
            ExitStatus::Ok => "ok",
            ExitStatus::Failure => "unexpected failure (I/O, network)",
            ExitStatus::Usage => "usage or contract error, or a command that is not built yet",
            ExitStatus::FloorFails => "a floor or check does not hold",
            ExitStatus::ProofFails => "proof does not verify, or nothing qualifies for ship",
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(status.code())
    }
}
