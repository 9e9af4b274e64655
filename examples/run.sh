#!/usr/bin/env bash
# The README's first command: builds and installs fasthts, then runs every
# command on the bundled example data (examples/README.md describes it).
#
#   bash examples/run.sh [OUTDIR]      # outputs in OUTDIR (default: examples/out)
#
# 1. `cargo install --path crates/fasthts-cli --locked`: the binary goes to
#    ~/.cargo/bin/fasthts ($CARGO_HOME/bin), the build to
#    $CARGO_TARGET_DIR (default ~/.cache/fasthts-target, which
#    scripts/test.sh reuses).
# 2. The man pages (`fasthts generate-man-pages`) go to
#    ~/.local/share/man/man1 ($XDG_DATA_HOME/man/man1).
# 3. Every command runs on the examples; the list of outputs ends the run.
# Without cargo it stops and says how to install Rust (rustup).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/examples/out}
ex=$root/examples
cargo_bin=${CARGO_HOME:-$HOME/.cargo}/bin
# Where cargo install puts binaries: $CARGO_INSTALL_ROOT/bin, else cargo's bin.
install_bin=${CARGO_INSTALL_ROOT:+$CARGO_INSTALL_ROOT/bin}
install_bin=${install_bin:-$cargo_bin}

if ! command -v cargo >/dev/null; then
    if [[ -x $cargo_bin/cargo ]]; then
        PATH=$cargo_bin:$PATH
    else
        cat >&2 <<'MSG'
examples/run.sh: cargo (Rust) is not installed. Install it with rustup
(https://rustup.rs), then run this again in a new shell:
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y
MSG
        exit 1
    fi
fi

# 1. Build and install (cargo shows its progress: a first build downloads and
# compiles about 55 crates, 4-5 minutes on 2 cores).
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/fasthts-target}
start=$SECONDS
cargo install --path "$root/crates/fasthts-cli" --locked
fasthts=$install_bin/fasthts
echo "installed $fasthts (build: $((SECONDS - start)) s)"

# 2. Man pages, when this build can write them.
man_dir=${XDG_DATA_HOME:-$HOME/.local/share}/man/man1
if "$fasthts" generate-man-pages --help >/dev/null 2>&1; then
    mkdir -p "$man_dir"
    "$fasthts" generate-man-pages "$man_dir"
    echo "man pages in $man_dir (man fasthts, man fasthts-sort, ...)"
    # man looks there when ~/.local/bin is on the PATH; else MANPATH says so.
    if command -v manpath >/dev/null && [[ ":$(manpath 2>/dev/null):" != *":${man_dir%/man1}:"* ]]; then
        echo "  for man to find them: export MANPATH=\"${man_dir%/man1}:\""
    fi
else
    echo "note: this fasthts cannot write man pages (no generate-man-pages); none installed"
fi

# 3. Every command on the examples. Outputs are replaced on a second run.
mkdir -p "$out"
cd "$out"
rm -f byname.bam sorted.bam sorted.bam.csi sorted.bam.bai tumour.bam tumour.bam.bai normal.bam normal.bam.bai \
    pileup.csv depth.txt reads.ct reads.ct.info reads.hist.csv reads.normalized.fq reads.filtered.fq reads.trimmed.fq \
    reads.pe.fq reads.se.fq reads.1.fq reads.2.fq reads.interleaved.fq reads.fa reads.long.fa readstats.txt reads.sample.fq \
    mapq30.sam unique-kmers.txt reads.hist-single.csv stats.txt coverage.txt reads.from-bam.fq reads.fa.fai reads.region.fa \
    collated.bam fixmate.bam fixmate.sorted.bam markdup.bam markdup.stats.txt sormadup.bam sormadup.stats.txt both.bam merged.bam
set -x
# samtools: quickcheck, flagstat (three formats), sort by name and back by
# coordinate (writing a CSI on the way), index (BAI), idxstats.
"$fasthts" quickcheck -v "$ex/example.bam" "$ex/example-normal.bam"
"$fasthts" flagstat "$ex/example.bam" >flagstat.txt
"$fasthts" flagstat -O json "$ex/example.bam" >flagstat.json
"$fasthts" flagstat -O tsv "$ex/example.bam" >flagstat.tsv
"$fasthts" sort -n -o byname.bam "$ex/example.bam"
"$fasthts" sort --write-index -o sorted.bam byname.bam
"$fasthts" index sorted.bam
"$fasthts" idxstats sorted.bam >idxstats.txt
# FACETS: snp-pileup of the normal and tumour BAMs (indexed here, beside
# copies) at the VCF's sites.
cp "$ex/example.bam" tumour.bam
cp "$ex/example-normal.bam" normal.bam
"$fasthts" index tumour.bam
"$fasthts" index normal.bam
"$fasthts" snp-pileup "$ex/sites.vcf" pileup.csv normal.bam tumour.bam
"$fasthts" depth normal.bam tumour.bam >depth.txt
"$fasthts" view -h -q 30 -o mapq30.sam tumour.bam
# QC as MultiQC reads it: stats and coverage; reads back to FASTQ from the
# name-sorted BAM.
"$fasthts" stats tumour.bam >stats.txt
"$fasthts" coverage tumour.bam normal.bam >coverage.txt
"$fasthts" fastq -n byname.bam >reads.from-bam.fq
# Duplicate marking as samtools' chain does it: reads grouped by name,
# mate fields and MC/ms tags filled in, sorted back, duplicates marked.
"$fasthts" collate -o collated.bam "$ex/example.bam"
"$fasthts" fixmate -m collated.bam fixmate.bam
"$fasthts" sort -o fixmate.sorted.bam fixmate.bam
"$fasthts" markdup -f markdup.stats.txt fixmate.sorted.bam markdup.bam
# The same four steps in one process: the same records.
"$fasthts" sormadup -f sormadup.stats.txt -o sormadup.bam "$ex/example.bam"
cmp <("$fasthts" view markdup.bam) <("$fasthts" view sormadup.bam)
# Glue: the pair concatenated as it is, and merged in coordinate order.
"$fasthts" cat -o both.bam tumour.bam normal.bam
"$fasthts" merge -o merged.bam tumour.bam normal.bam
# khmer: count k-mers, their abundance histogram, digital normalisation,
# trimming at low-abundance k-mers with the saved table and in two passes.
"$fasthts" kmer count -k 20 reads.ct "$ex/reads.fq.gz"
"$fasthts" kmer abundance-dist reads.ct "$ex/reads.fq.gz" reads.hist.csv
"$fasthts" kmer normalize -k 20 -C 10 "$ex/reads.fq.gz" -o reads.normalized.fq
"$fasthts" kmer filter-abund -C 2 reads.ct "$ex/reads.fq.gz" -o reads.filtered.fq
"$fasthts" kmer trim-low-abund -k 20 -C 2 -V "$ex/reads.fq.gz" -o reads.trimmed.fq
"$fasthts" kmer extract-paired-reads "$ex/reads.fq.gz" -p reads.pe.fq -s reads.se.fq
"$fasthts" kmer split-paired-reads reads.pe.fq -1 reads.1.fq -2 reads.2.fq
"$fasthts" kmer interleave-reads reads.1.fq reads.2.fq -o reads.interleaved.fq
"$fasthts" kmer fastq-to-fasta "$ex/reads.fq.gz" -o reads.fa
"$fasthts" kmer extract-long-sequences -l 100 reads.fa -o reads.long.fa
# samtools faidx: index the FASTA just written and extract a region of it.
"$fasthts" faidx reads.fa
"$fasthts" faidx reads.fa "$(head -1 reads.fa | cut -c2- | cut -d' ' -f1):11-60" >reads.region.fa
"$fasthts" kmer readstats "$ex/reads.fq.gz" -o readstats.txt
"$fasthts" kmer sample-reads-randomly -N 100 -R 1 "$ex/reads.fq.gz" -o reads.sample.fq
"$fasthts" kmer unique-kmers -k 20 -R unique-kmers.txt "$ex/reads.fq.gz"
"$fasthts" kmer abundance-dist-single -k 20 "$ex/reads.fq.gz" reads.hist-single.csv
{ set +x; } 2>/dev/null

cat flagstat.txt
cat <<EOF

outputs in $out:
  flagstat.txt, flagstat.json, flagstat.tsv   fasthts flagstat of example.bam
  byname.bam                                  sort -n (read-name order)
  sorted.bam, sorted.bam.csi, sorted.bam.bai  sort --write-index back to coordinate order; index
  idxstats.txt                                idxstats of sorted.bam
  tumour.bam(.bai), normal.bam(.bai)          indexed copies of the example pair
  pileup.csv                                  snp-pileup: allele counts at sites.vcf (FACETS' CSV)
  depth.txt                                   depth: per-position depth of normal.bam and tumour.bam
  mapq30.sam                                  view -h -q 30: tumour.bam's records of MAPQ >= 30, as SAM
  stats.txt                                   stats of tumour.bam (samtools stats' text, as MultiQC reads it)
  coverage.txt                                coverage: per-reference table of tumour.bam and normal.bam
  reads.from-bam.fq                           fastq -n: byname.bam's reads as FASTQ
  collated.bam, fixmate.bam                   collate; fixmate -m (mate fields, MC and ms tags)
  fixmate.sorted.bam, markdup.bam             sort; markdup: duplicates flagged (markdup.stats.txt: its counts)
  sormadup.bam                                sormadup: the four steps above in one process (the same records)
  both.bam, merged.bam                        cat of tumour.bam and normal.bam; merge of the two by coordinate
  reads.ct, reads.ct.info                     kmer count: the k-mer table of reads.fq.gz (khmer's .ct)
  reads.hist.csv                              kmer abundance-dist: the k-mer abundance histogram
  reads.normalized.fq                         kmer normalize: reads kept at median k-mer coverage <= 10
  reads.filtered.fq                           kmer filter-abund: reads trimmed at k-mers seen once
  reads.trimmed.fq                            kmer trim-low-abund: two-pass trimming
  reads.pe.fq, reads.se.fq                    kmer extract-paired-reads: pairs and singletons
  reads.1.fq, reads.2.fq                      kmer split-paired-reads of reads.pe.fq
  reads.interleaved.fq                        kmer interleave-reads of reads.1.fq and reads.2.fq
  reads.fa, reads.long.fa                     kmer fastq-to-fasta; extract-long-sequences -l 100
  reads.fa.fai, reads.region.fa               faidx: reads.fa's index; bases 11-60 of its first read
  readstats.txt                               kmer readstats
  reads.sample.fq                             kmer sample-reads-randomly -N 100 -R 1
  unique-kmers.txt                            kmer unique-kmers: HyperLogLog estimate of distinct 20-mers
  reads.hist-single.csv                       kmer abundance-dist-single: count and histogram in one run
fasthts is $fasthts$(command -v fasthts >/dev/null || echo " (add $install_bin to your PATH)")
EOF
