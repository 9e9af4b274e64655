//! Clean interruption: SIGINT, SIGTERM and SIGHUP remove the temporary
//! outputs and run files in progress, then end the process with the
//! conventional status (128 + signal number).
//!
//! A signal the process was started with ignored (`nohup`, a job started
//! with `&` from a script ignores SIGINT, `trap '' TERM`) stays ignored, as
//! in samtools: the caller asked for the job to survive it.

/// Blocks the signals in this thread (and so in every thread started
/// after, the rayon pool included) and starts one thread that waits for
/// them. Call first thing in `main`.
pub fn install() {
    // SAFETY: plain libc calls on a zeroed, initialised signal set owned by
    // this function; sigwait runs on a thread of its own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        let mut taken = 0;
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            if !ignored(sig) {
                libc::sigaddset(&mut set, sig);
                taken += 1;
            }
        }
        if taken == 0 {
            return;
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        std::thread::spawn(move || {
            let mut sig: libc::c_int = 0;
            if libc::sigwait(&set, &mut sig) == 0 {
                fasthts::output::remove_in_progress();
                // _exit, not exit: the other threads are still running, and
                // exit's atexit handlers (C++ static destructors of a
                // linked library such as librocksdb) would run under them
                // (RocksDB aborted with "pthread lock: Invalid argument").
                libc::_exit(128 + sig);
            }
        });
    }
}

/// True when `sig`'s disposition is SIG_IGN (inherited from the parent).
fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one
    // into a zeroed struct owned here.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}
