//! The Linux sandbox: a Landlock ruleset and a seccomp filter, made in the parent and
//! put in place in the child.

// The one place the sandbox needs `unsafe`: the raw system calls, and the hook that
// runs in the child between `fork` and `exec` (where only system calls are made, no
// allocation: the parent may hold a lock another of its threads took).
#![allow(unsafe_code)]

use std::io;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

use crate::{Policy, SandboxError, Support};

/// The Landlock rights this sandbox was written and tested for: on a kernel with
/// fewer, the ones it has are enforced (TCP rules need 4, scoping 6); the seccomp
/// filter refuses the network whatever the ABI.
const ABI_USED: ABI = ABI::V6;

/// Devices every program expects to write to.
const DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

pub(crate) fn probe() -> Support {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: asks the ABI version only: no attributes are read (null, size 0).
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    match u32::try_from(version) {
        Ok(abi) if abi > 0 => Support::Landlock { abi },
        _ => match io::Error::last_os_error().raw_os_error() {
            Some(libc::EOPNOTSUPP) => Support::Missing(
                "this kernel has Landlock but it is not enabled (add `landlock` to the \
                 kernel's `lsm=` boot parameter)"
                    .into(),
            ),
            _ => {
                Support::Missing("this kernel has no Landlock (Linux 5.13 or later has it)".into())
            }
        },
    }
}

pub(crate) fn confine(
    command: &mut tokio::process::Command,
    policy: &Policy,
) -> Result<(), SandboxError> {
    let mut ruleset = Some(ruleset(policy)?);
    let filter = (!policy.network).then(no_network_filter);
    // SAFETY: the hook makes system calls only (see `enter`).
    unsafe {
        command.pre_exec(move || enter(ruleset.take(), filter.as_deref()));
    }
    Ok(())
}

/// In the child, just before `exec`: the ruleset, then the filter.
fn enter(ruleset: Option<RulesetCreated>, filter: Option<&[libc::sock_filter]>) -> io::Result<()> {
    let Some(ruleset) = ruleset else {
        // The hook runs once per spawn; a second spawn of the same command would run
        // unconfined, so it fails instead.
        return Err(io::Error::from_raw_os_error(libc::EPERM));
    };
    match ruleset.restrict_self() {
        Ok(status) if status.ruleset != RulesetStatus::NotEnforced => {}
        Ok(_) => return Err(io::Error::from_raw_os_error(libc::EPERM)),
        Err(_) => return Err(io::Error::last_os_error()),
    }
    if let Some(filter) = filter {
        let program = libc::sock_fprog {
            len: u16::try_from(filter.len()).unwrap_or(u16::MAX),
            filter: filter.as_ptr().cast_mut(),
        };
        // SAFETY: `program` points at `filter`, alive for the call; no_new_privs is
        // set by the ruleset above, as the kernel requires of an unprivileged filter.
        let done = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &raw const program,
            )
        };
        if done != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Reads everywhere; writes only under `policy.writable` and to the usual devices; no
/// TCP unless `policy.network`; no signals or abstract sockets out of the sandbox.
fn ruleset(policy: &Policy) -> Result<RulesetCreated, SandboxError> {
    let kernel = |err: landlock::RulesetError| SandboxError::Kernel(err.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_USED))
        .map_err(kernel)?;
    if !policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_USED))
            .map_err(kernel)?;
    }
    let mut created = ruleset
        .scope(Scope::from_all(ABI_USED))
        .map_err(kernel)?
        .create()
        .map_err(kernel)?
        .no_new_privs(true)
        .add_rule(beneath(Path::new("/"), AccessFs::from_read(ABI_USED))?)
        .map_err(kernel)?;
    for path in &policy.writable {
        let access = if path.is_dir() {
            AccessFs::from_all(ABI_USED)
        } else {
            AccessFs::from_file(ABI_USED)
        };
        created = created.add_rule(beneath(path, access)?).map_err(kernel)?;
    }
    for device in DEVICES
        .map(Path::new)
        .into_iter()
        .filter(|path| path.exists())
    {
        created = created
            .add_rule(beneath(device, AccessFs::from_file(ABI_USED))?)
            .map_err(kernel)?;
    }
    Ok(created)
}

fn beneath(
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> Result<PathBeneath<PathFd>, SandboxError> {
    let fd = PathFd::new(path).map_err(|err| SandboxError::Path {
        path: path.to_owned(),
        detail: err.to_string(),
    })?;
    Ok(PathBeneath::new(fd, access))
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// x32 system calls share x86_64's arch with this bit set in their number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// A seccomp program: Internet sockets are refused (`EACCES`: UDP and raw ones are
/// beyond Landlock's TCP rules), `io_uring_setup` is absent (`ENOSYS`: its requests
/// pass no filter), system calls of another architecture are refused; the rest runs.
/// Forward jumps only, counted in instructions skipped.
fn no_network_filter() -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    // `struct seccomp_data`: the call's number, its architecture, its first argument
    // (the low half, on these little-endian machines).
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    const ARG0: u32 = 16;
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let errno = |errno: i32| libc::SECCOMP_RET_ERRNO | (errno.unsigned_abs() & 0xffff);
    let nr = |call: libc::c_long| u32::try_from(call).unwrap_or(u32::MAX);
    vec![
        op(LD_W_ABS, 0, 0, ARCH),                     // 0
        op(JEQ, 0, 10, AUDIT_ARCH),                   // 1: else → 12
        op(LD_W_ABS, 0, 0, NR),                       // 2
        op(JGE, 8, 0, X32_SYSCALL_BIT),               // 3: x32 → 12
        op(JEQ, 0, 3, nr(libc::SYS_socket)),          // 4: else → 8
        op(LD_W_ABS, 0, 0, ARG0),                     // 5
        op(JEQ, 3, 0, libc::AF_INET.unsigned_abs()),  // 6: → 10
        op(JEQ, 2, 1, libc::AF_INET6.unsigned_abs()), // 7: → 10, else → 9
        op(JEQ, 2, 0, nr(libc::SYS_io_uring_setup)),  // 8: → 11
        op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),       // 9
        op(RET, 0, 0, errno(libc::EACCES)),           // 10
        op(RET, 0, 0, errno(libc::ENOSYS)),           // 11
        op(RET, 0, 0, errno(libc::EPERM)),            // 12
    ]
}
