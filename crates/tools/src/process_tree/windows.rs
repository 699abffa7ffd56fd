//! The tree as a Job Object: the child is put in a job of its own as soon as it is
//! spawned, its children join it as they start, and closing the job (with
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`) ends them all. A grandchild started in the
//! instant between the spawn and the assignment escapes: std cannot start a child
//! suspended and resume it.

// The Win32 calls that make, fill and close the job.
#![allow(unsafe_code)]

use tokio::process::{Child, Command};
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject,
};

pub(super) fn prepare(_: &mut Command) {}

pub(super) struct Tree(Option<HANDLE>);

// The handle is the job's, owned by this value alone.
unsafe impl Send for Tree {}
unsafe impl Sync for Tree {}

impl Tree {
    pub(super) fn of(child: &Child) -> Self {
        let Some(process) = child.raw_handle() else {
            return Self(None);
        };
        // SAFETY: a new unnamed job with default security; checked for null.
        let job = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if job.is_null() {
            tracing::warn!(error = %std::io::Error::last_os_error(), "no job object for a command: what it starts may outlive it");
            return Self(None);
        }
        // SAFETY: `limits` is a zeroed plain C struct of the size passed.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        let size = u32::try_from(std::mem::size_of_val(&limits)).unwrap_or(u32::MAX);
        // SAFETY: `job` is ours and open; `limits` lives across the call.
        let limited = unsafe {
            SetInformationJobObject(
                job,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                size,
            )
        };
        // SAFETY: both handles are open: the child's is held by `child`.
        let assigned =
            limited != 0 && unsafe { AssignProcessToJobObject(job, process as HANDLE) } != 0;
        if !assigned {
            tracing::warn!(error = %std::io::Error::last_os_error(), "a command could not join its job: what it starts may outlive it");
        }
        Self(Some(job))
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(job) = self.0.take() {
            // SAFETY: the job is ours; ending it and closing it are each done once.
            unsafe {
                TerminateJobObject(job, 1);
                CloseHandle(job);
            }
        }
    }
}
