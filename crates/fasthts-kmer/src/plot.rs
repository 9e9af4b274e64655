//! A small k-mer abundance histogram plot (log-scaled axes) as SVG or PNG,
//! for `abundance-dist --plot` (a fasthts addition; khmer has no plot).
//! SVG is text; PNG is drawn into an RGB buffer (a few lines, axes and
//! digits: no plotting library's fonts and rasteriser needed) and encoded
//! by the `png` crate.

use std::io;

const W: usize = 800;
const H: usize = 500;
const M: f64 = 60.0;

/// Points (log10 abundance, log10 number of k-mers) for abundances ≥ 1 with
/// a non-zero count.
fn points(hist: &[u64]) -> Vec<(f64, f64)> {
    hist.iter().enumerate().skip(1).filter(|(_, &c)| c > 0).map(|(a, &c)| ((a as f64).log10(), (c as f64).log10())).collect()
}

fn extent(pts: &[(f64, f64)]) -> (f64, f64) {
    let xmax = pts.iter().map(|p| p.0).fold(1.0f64, f64::max).ceil().max(1.0);
    let ymax = pts.iter().map(|p| p.1).fold(1.0f64, f64::max).ceil().max(1.0);
    (xmax, ymax)
}

/// The plot as an SVG document.
pub fn svg(hist: &[u64]) -> String {
    let pts = points(hist);
    let (xmax, ymax) = extent(&pts);
    let (w, h) = (W as f64, H as f64);
    let sx = |x: f64| M + x / xmax * (w - 2.0 * M);
    let sy = |y: f64| h - M - y / ymax * (h - 2.0 * M);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    s += &format!("<line x1=\"{M}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", h - M, w - M, h - M);
    s += &format!("<line x1=\"{M}\" y1=\"{M}\" x2=\"{M}\" y2=\"{}\" stroke=\"black\"/>\n", h - M);
    for i in 0..=(xmax as i32) {
        s += &format!("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">1e{i}</text>\n", sx(i as f64), h - M + 18.0);
    }
    for i in 0..=(ymax as i32) {
        s += &format!("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">1e{i}</text>\n", M - 6.0, sy(i as f64) + 4.0);
    }
    s += &format!("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">k-mer abundance</text>\n", w / 2.0, h - 15.0);
    s += &format!(
        "<text x=\"15\" y=\"{}\" transform=\"rotate(-90 15 {})\" text-anchor=\"middle\">number of distinct k-mers</text>\n",
        h / 2.0,
        h / 2.0
    );
    let poly: Vec<String> = pts.iter().map(|&(x, y)| format!("{:.2},{:.2}", sx(x), sy(y))).collect();
    s += &format!("<polyline fill=\"none\" stroke=\"steelblue\" stroke-width=\"1.5\" points=\"{}\"/>\n</svg>\n", poly.join(" "));
    s
}

struct Canvas {
    px: Vec<u8>,
}

impl Canvas {
    fn new() -> Self {
        Canvas { px: vec![255u8; W * H * 3] }
    }
    fn set(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < W && (y as usize) < H {
            let i = (y as usize * W + x as usize) * 3;
            self.px[i..i + 3].copy_from_slice(&c);
        }
    }
    fn line(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, c: [u8; 3], thick: i64) {
        let steps = ((x1 - x0).abs().max((y1 - y0).abs()).ceil() as usize).max(1);
        for i in 0..=steps {
            let t = i as f64 / steps as f64;
            let (x, y) = ((x0 + t * (x1 - x0)).round() as i64, (y0 + t * (y1 - y0)).round() as i64);
            for dx in 0..thick {
                for dy in 0..thick {
                    self.set(x + dx - thick / 2, y + dy - thick / 2, c);
                }
            }
        }
    }
    /// Draw text with a 3×5 bitmap font (digits, 'e'), scaled by 2.
    fn text(&mut self, s: &str, x: i64, y: i64) {
        const FONT: [(char, [u8; 5]); 11] = [
            ('0', [7, 5, 5, 5, 7]),
            ('1', [2, 6, 2, 2, 7]),
            ('2', [7, 1, 7, 4, 7]),
            ('3', [7, 1, 7, 1, 7]),
            ('4', [5, 5, 7, 1, 1]),
            ('5', [7, 4, 7, 1, 7]),
            ('6', [7, 4, 7, 5, 7]),
            ('7', [7, 1, 1, 1, 1]),
            ('8', [7, 5, 7, 5, 7]),
            ('9', [7, 5, 7, 1, 7]),
            ('e', [0, 7, 7, 4, 7]),
        ];
        let mut cx = x;
        for ch in s.chars() {
            if let Some((_, rows)) = FONT.iter().find(|(c, _)| *c == ch) {
                for (ry, bits) in rows.iter().enumerate() {
                    for rx in 0..3 {
                        if bits & (4 >> rx) != 0 {
                            for d in 0..4 {
                                self.set(cx + rx * 2 + d % 2, y + ry as i64 * 2 + d / 2, [0, 0, 0]);
                            }
                        }
                    }
                }
            }
            cx += 8;
        }
    }
}

/// The plot as PNG bytes (axes, decade ticks labelled `1eN`, the curve).
pub fn png(hist: &[u64]) -> io::Result<Vec<u8>> {
    let pts = points(hist);
    let (xmax, ymax) = extent(&pts);
    let (w, h) = (W as f64, H as f64);
    let sx = |x: f64| M + x / xmax * (w - 2.0 * M);
    let sy = |y: f64| h - M - y / ymax * (h - 2.0 * M);
    let mut c = Canvas::new();
    let black = [0, 0, 0];
    c.line(M, h - M, w - M, h - M, black, 1);
    c.line(M, M, M, h - M, black, 1);
    for i in 0..=(xmax as i32) {
        let x = sx(i as f64);
        c.line(x, h - M, x, h - M + 5.0, black, 1);
        c.text(&format!("1e{i}"), x as i64 - 10, (h - M + 10.0) as i64);
    }
    for i in 0..=(ymax as i32) {
        let y = sy(i as f64);
        c.line(M - 5.0, y, M, y, black, 1);
        c.text(&format!("1e{i}"), (M - 40.0) as i64, y as i64 - 5);
    }
    for win in pts.windows(2) {
        c.line(sx(win[0].0), sy(win[0].1), sx(win[1].0), sy(win[1].1), [70, 130, 180], 2);
    }
    if pts.len() == 1 {
        c.line(sx(pts[0].0), sy(pts[0].1), sx(pts[0].0), sy(pts[0].1), [70, 130, 180], 3);
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, W as u32, H as u32);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.write_header().and_then(|mut w| w.write_image_data(&c.px)).map_err(io::Error::other)?;
    Ok(out)
}

/// The plot formats, chosen by the file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotFormat {
    Svg,
    Png,
}

impl PlotFormat {
    /// The format a plot path asks for (`.svg` or `.png`, either case);
    /// the refusal says what is accepted. Front ends call it before any
    /// work, so that a plot it cannot write is refused before the
    /// histogram is written.
    pub fn from_path(path: &str) -> Result<PlotFormat, String> {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".svg") {
            Ok(PlotFormat::Svg)
        } else if lower.ends_with(".png") {
            Ok(PlotFormat::Png)
        } else {
            Err(format!("{path}: --plot writes FILE.png or FILE.svg (PDF and other formats are not supported)"))
        }
    }
}

/// Write the plot; the format follows the extension (`.svg` or `.png`).
pub fn write_plot(hist: &[u64], path: &str) -> io::Result<()> {
    let bytes = match PlotFormat::from_path(path).map_err(io::Error::other)? {
        PlotFormat::Svg => svg(hist).into_bytes(),
        PlotFormat::Png => png(hist)?,
    };
    crate::ctfile::write_atomically(std::path::Path::new(path), |w| w.write_all(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_and_svg() {
        let mut h = vec![0u64; 65536];
        for (a, v) in [(1usize, 5000u64), (2, 800), (3, 200), (10, 50), (100, 3)] {
            h[a] = v;
        }
        let p = png(&h).unwrap();
        assert_eq!(&p[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&p[12..16], b"IHDR");
        assert!(p.ends_with(&[0xAE, 0x42, 0x60, 0x82])); // IEND's CRC
        let s = svg(&h);
        assert!(s.starts_with("<svg") && s.contains("polyline"));
        assert_eq!(PlotFormat::from_path("h.PNG"), Ok(PlotFormat::Png));
        assert!(PlotFormat::from_path("h.pdf").unwrap_err().contains("FILE.png or FILE.svg"));
    }
}
