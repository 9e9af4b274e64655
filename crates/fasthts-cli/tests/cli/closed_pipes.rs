//! A reader that goes away (`| head`) ends the run at once, as it ends
//! samtools: killed by SIGPIPE (141 in a shell), without first computing
//! the rest of the output (issue 39, item 5). depth and view read their
//! windows and regions on all threads and write them in order; a failed
//! write stops the workers ([`fasthts::gather::fill_in_order`]).

use crate::common::*;
use std::process::Command;
use std::time::Duration;

#[test]
fn a_closed_pipe_ends_depth_and_view_at_once_with_sigpipe() {
    let dir = TempDir::new("closed-pipe");
    let sam = dir.path("big.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&["--seed", "5", "--target-bytes", "1G"]).unwrap()).unwrap();
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
        // The CPU time the command spent (user + system, all its threads,
        // from bash's `time`): unlike wall time, not stretched by other
        // work on the machine. The command's own stderr goes to a file.
        let timed = |tail: &str| {
            let err = dir.path("err.txt");
            let line = format!("TIMEFORMAT='%3U %3S'; time {{ {exe} {args} 2>{} {tail}; s=${{PIPESTATUS[0]}}; }}; exit $s", err.display());
            let mut sh = Command::new("bash");
            sh.arg("-c").arg(&line);
            let out = run_with_timeout(sh, Duration::from_secs(300));
            let cpu: f64 = text(&out.stderr).split_whitespace().map(|t| t.parse::<f64>().unwrap()).sum();
            (out.status.code(), cpu, std::fs::read_to_string(&err).unwrap())
        };
        let (full, full_cpu, full_err) = timed("> /dev/null");
        assert_eq!(full, Some(0), "{args}: {full_err}");
        let (cut, cut_cpu, cut_err) = timed("| head -1 > /dev/null");
        assert_eq!(cut, Some(141), "{args}: {cut_err}");
        assert!(cut_err.is_empty(), "{args}: {cut_err}");
        eprintln!("{args}: {cut_cpu:.3} s of CPU with the reader gone, {full_cpu:.3} s in full");
        // The whole run computes every window; the cut one a few.
        assert!(cut_cpu * 3.0 < full_cpu, "{args}: {cut_cpu} s of CPU with the reader gone, {full_cpu} s in full");
    }
}
