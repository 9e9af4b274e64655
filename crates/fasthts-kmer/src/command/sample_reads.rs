//! sample-reads-randomly's decisions around its reservoirs: the seed of
//! its generator, and the files its samples go to.

use super::error::Error;
use super::inputs::require_output_for_stdin;
use super::outputs::{basename, output_name};
use crate::pyrandom::PyRandom;

/// The generator: seeded with `-R` (a decimal integer, as Python's
/// `int()` reads it), unless it is 0, which khmer ignores (`if
/// args.random_seed:`); else from the system's entropy, as Python seeds
/// itself. `None` for a seed that is not an integer.
pub fn sample_generator(seed: Option<&str>) -> Option<PyRandom> {
    if let Some(s) = seed {
        let seeded = PyRandom::from_decimal(s)?;
        if s.chars().any(|c| c.is_ascii_digit() && c != '0') {
            return Some(seeded);
        }
    }
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    let x = h.finish();
    Some(PyRandom::from_key(&[x as u32, (x >> 32) as u32]))
}

/// Where sample-reads-randomly's samples go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleOutputs {
    /// What its messages call the output: `-o` (`<stdout>` for `-`) or
    /// `<first input's name>.subset`; with several samples, the stem of
    /// their files.
    pub name: String,
    /// The file of each sample: `-o` or the name for one sample, else
    /// `<name>.0`, `<name>.1`, ...
    pub paths: Vec<String>,
    /// `-o` with several samples (let through by `--force`): khmer opens
    /// it (so creates it, empty) and does not use it.
    pub unused: Option<String>,
}

/// The outputs of `samples` samples (at least 1) of `inputs`: `-o`
/// (`output`) names one sample's file; with several, it is refused
/// (khmer's message has no line end) unless `force`. Standard input as
/// the first input needs `-o`.
pub fn sample_outputs(output: Option<&str>, inputs: &[String], samples: usize, force: bool) -> Result<SampleOutputs, Error> {
    let name = match output {
        Some(path) => {
            if samples > 1 && !force {
                return Err(Error::refused(
                    "Error: cannot specify -o with more than one sample.NOTE: This can be overridden using the --force argument",
                ));
            }
            output_name(Some(path))
        }
        None => {
            let first = inputs.first().map_or("", String::as_str);
            require_output_for_stdin(&[first], None, "'-o'")?;
            format!("{}.subset", basename(first))
        }
    };
    Ok(if samples == 1 {
        SampleOutputs { paths: vec![output.map_or_else(|| name.clone(), str::to_string)], name, unused: None }
    } else {
        SampleOutputs { paths: (0..samples).map(|n| format!("{name}.{n}")).collect(), name, unused: output.map(str::to_string) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds() {
        let draw = |seed| sample_generator(seed).unwrap().getrandbits(32);
        assert_eq!(draw(Some("7")), PyRandom::from_decimal("7").unwrap().getrandbits(32));
        assert_eq!(draw(Some(" -0_7")), PyRandom::from_decimal("7").unwrap().getrandbits(32));
        assert!(sample_generator(Some("x")).is_none());
        // 0 is ignored: seeded from the system
        assert!(sample_generator(Some("0")).is_some());
    }

    #[test]
    fn sample_files() {
        let inputs = ["d/r.fq".to_string()];
        let one = sample_outputs(None, &inputs, 1, false).unwrap();
        assert_eq!((one.name.as_str(), one.paths.as_slice(), one.unused), ("r.fq.subset", &["r.fq.subset".to_string()][..], None));
        let stdout = sample_outputs(Some("-"), &inputs, 1, false).unwrap();
        assert_eq!((stdout.name.as_str(), stdout.paths.as_slice()), ("<stdout>", &["-".to_string()][..]));
        let three = sample_outputs(None, &inputs, 3, false).unwrap();
        assert_eq!(three.paths, ["r.fq.subset.0", "r.fq.subset.1", "r.fq.subset.2"]);
        assert!(sample_outputs(Some("o.fq"), &inputs, 2, false).is_err());
        let forced = sample_outputs(Some("o.fq"), &inputs, 2, true).unwrap();
        assert_eq!((forced.paths, forced.unused), (vec!["o.fq.0".to_string(), "o.fq.1".to_string()], Some("o.fq".to_string())));
        let stdin = sample_outputs(None, &["-".to_string()], 1, false).unwrap_err();
        assert_eq!(stdin.to_string(), "Accepting input from stdin; output filename must be provided with '-o'.");
    }
}
