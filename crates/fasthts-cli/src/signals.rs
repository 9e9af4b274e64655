//! Clean interruption: SIGINT, SIGTERM and SIGHUP remove the temporary
//! outputs and run files in progress, then end the process with the
//! conventional status (128 + signal number).

/// Blocks the signals in this thread (and so in every thread started
/// after, the rayon pool included) and starts one thread that waits for
/// them. Call first thing in `main`.
pub fn install() {
    // SAFETY: plain libc calls on a zeroed, initialised signal set owned by
    // this function; sigwait runs on a thread of its own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
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
