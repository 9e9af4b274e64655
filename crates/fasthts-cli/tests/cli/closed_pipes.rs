//! A reader that goes away (`| head`) ends the run at once, as it ends
//! samtools: killed by SIGPIPE (141 in a shell), without first computing
//! the rest of the output (issue 39, item 5). depth and view read their
//! windows and regions on all threads and write them in order; a failed
//! write stops the workers ([`fasthts::gather::fill_in_order`]).

use crate::common::*;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_closed_pipe_ends_depth_and_view_at_once_with_sigpipe() {
    let dir = TempDir::new("closed-pipe");
    let sam = dir.path("big.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&["--seed", "5", "--target-bytes", "400M"]).unwrap()).unwrap();
    let bam = dir.path("big.bam");
    let mut view = fasthts();
    view.args(["view", "-b", "-o"]).arg(&bam).arg(&sam);
    assert!(run(view).status.success());
    let mut index = fasthts();
    index.arg("index").arg(&bam);
    assert!(run(index).status.success());
    let exe = env!("CARGO_BIN_EXE_fasthts");
    let bam = bam.to_str().unwrap();
    for args in [format!("depth {bam}"), format!("depth -a -@2 {bam}"), format!("view -@2 {bam} chr1 chr2 chr4"), format!("view -M {bam} chr1 chr2")] {
        let timed = |line: &str| {
            let mut sh = Command::new("bash");
            sh.arg("-c").arg(line);
            let start = Instant::now();
            let out = run_with_timeout(sh, Duration::from_secs(300));
            (out, start.elapsed())
        };
        let (full, full_time) = timed(&format!("{exe} {args} > /dev/null"));
        assert!(full.status.success(), "{args}: {}", text(&full.stderr));
        let (cut, cut_time) = timed(&format!("{exe} {args} | head -1 > /dev/null; exit ${{PIPESTATUS[0]}}"));
        assert_eq!(cut.status.code(), Some(141), "{args}: {}", text(&cut.stderr));
        assert!(cut.stderr.is_empty(), "{args}: {}", text(&cut.stderr));
        // The whole run computes every window; the cut one a few.
        assert!(cut_time * 2 < full_time, "{args}: {cut_time:?} with the reader gone, {full_time:?} in full");
    }
}
