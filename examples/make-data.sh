#!/usr/bin/env bash
# Regenerates the bundled example data (described in examples/README.md)
# from the seeded generator fasthts-testgen: the same bytes on every run
# with the same fasthts build. For maintainers; examples/run.sh only reads
# the committed files.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/fasthts-target}
cargo build --release -p fasthts-testgen -p fasthts-cli --manifest-path "$root/Cargo.toml"
gen=$CARGO_TARGET_DIR/release/fasthts-testgen
fasthts=$CARGO_TARGET_DIR/release/fasthts
cd "$root/examples"

# A tumour/normal pair: two samples (--seed) of one individual
# (--genome-seed: same references, same heterozygous SNPs), two small
# chromosomes, chrM and two empty unplaced contigs. The generator writes
# coordinate-sorted SAM; fasthts sort turns it into BAM.
pair=(--genome-seed 20 --refs 2 --ref-len 20k)
"$gen" -q "${pair[@]}" --reads 900 --seed 21 | "$fasthts" sort --no-PG -o example.bam -
"$gen" -q "${pair[@]}" --reads 900 --seed 22 | "$fasthts" sort --no-PG -o example-normal.bam -
# Candidate SNP sites of that genome: every heterozygous SNP plus random
# positions (a few multi-allelic and indel records, which snp-pileup skips).
"$gen" -q "${pair[@]}" --reads 0 --sites-vcf sites.vcf --sites 300 >/dev/null
# That genome as FASTA: the reference of pileup(fastafile=) in docs/python.md.
"$gen" -q "${pair[@]}" --reads 0 --reference-fasta example.fa >/dev/null

# Reads for the k-mer commands: the primary records of a generated sample
# (one 20 kb chromosome and a deep chrM, paired 100 bp reads with
# sequencing errors) as FASTQ, gzipped (without a timestamp). A missing
# QUAL (`*`) becomes `I`s; mates are named /1 and /2.
"$gen" -q --seed 23 --refs 1 --ref-len 20k --reads 1500 --read-len 100 |
    awk -F'\t' '!/^@/ && int($2 / 256) % 2 == 0 && int($2 / 2048) % 2 == 0 {
        qual = $11
        if (qual == "*") { qual = $10; gsub(/./, "I", qual) }
        mate = $2 % 2 ? (int($2 / 64) % 2 ? "/1" : "/2") : ""
        print "@" $1 mate "\n" $10 "\n+\n" qual
    }' | gzip -n -9 >reads.fq.gz
ls -l example.bam example-normal.bam sites.vcf example.fa reads.fq.gz
