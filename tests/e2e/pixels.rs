//! What the window paints, not what its DOM holds: an element's region cut from a
//! WebDriver screenshot, checked to be more than a flat fill and read back with OCR.
//! A DOM check passed while its own screenshot showed a blank card; these look.
//!
//! Uses ImageMagick (`convert`) and Tesseract (`tesseract`), both from apt.

use std::path::Path;
use std::process::Command;

use crate::harness::App;

/// What a person can read of the element `css` on the screen now: it is scrolled
/// into view, the window is captured, and the part of the element inside the window
/// is cut out and saved as `NAME.png` beside the other screenshots. Panics, naming
/// the file to look at, if that part is a flat fill inside its border (nothing is
/// painted there).
pub async fn readable_text(app: &App, css: &str, name: &str) -> String {
    ocr(&region(app, css, name).await)
}

/// The part of the element `css` inside the window, as painted now, saved as
/// `NAME.png` beside the other screenshots. Panics, naming the file to look at, if
/// that part is a flat fill inside its border (nothing is painted there).
pub async fn region(app: &App, css: &str, name: &str) -> std::path::PathBuf {
    let element = app.wait_for(css).await;
    app.driver
        .execute(
            "arguments[0].scrollIntoView({block: 'nearest'});",
            vec![element.to_json().expect("an element")],
        )
        .await
        .expect("scrolling the element into view");
    // Let the scroll paint before the capture.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let rect = app
        .driver
        .execute(
            "const r = arguments[0].getBoundingClientRect(), d = window.devicePixelRatio; \
             const top = Math.max(r.top, 0), bottom = Math.min(r.bottom, window.innerHeight); \
             return [Math.round(r.left * d), Math.round(top * d), \
                     Math.round(r.width * d), Math.round((bottom - top) * d)];",
            vec![element.to_json().expect("an element")],
        )
        .await
        .expect("the element's place")
        .json()
        .clone();
    let [x, y, width, height] = [0, 1, 2, 3].map(|i| rect[i].as_i64().unwrap_or(0));
    assert!(
        width > 8 && height > 8,
        "{css} is not on the screen: {rect}"
    );
    let window = app.screenshot(&format!("{name}-window")).await;
    let shot = window.with_file_name(format!("{name}.png"));
    let status = Command::new("convert")
        .arg(&window)
        .args(["-crop", &format!("{width}x{height}+{x}+{y}"), "+repage"])
        .arg(&shot)
        .status()
        .expect("ImageMagick's convert runs (apt install imagemagick)");
    assert!(
        status.success(),
        "convert could not cut {css} out of {}",
        window.display()
    );
    let spread = inner_spread(&shot);
    assert!(
        spread > 0.01,
        "{} is a flat fill inside its border (spread {spread}): nothing is painted there",
        shot.display()
    );
    shot
}

/// How many of the image's pixels are `ink` drawn on `paper`: text in a colour is
/// mostly edges, each pixel a blend of the two, so a pixel counts when it lies on the
/// way from paper to ink (within 16 per channel of the line) and at least half way.
pub fn inked(png: &Path, paper: [u8; 3], ink: [u8; 3]) -> u64 {
    let out = Command::new("convert")
        .arg(png)
        .args([
            "-alpha",
            "off",
            "-depth",
            "8",
            "-format",
            "%c",
            "histogram:info:-",
        ])
        .output()
        .expect("ImageMagick's convert runs");
    assert!(
        out.status.success(),
        "convert could not count {}",
        png.display()
    );
    let [paper, ink] = [paper, ink].map(|rgb| rgb.map(f64::from));
    let way: Vec<f64> = (0..3).map(|i| ink[i] - paper[i]).collect();
    let length = way.iter().map(|d| d * d).sum::<f64>();
    // Lines read `   12: (142,63,179) #8E3FB3 srgb(142,63,179)`.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let (count, rest) = line.trim().split_once(':')?;
            let channels = rest.trim().strip_prefix('(')?.split_once(')')?.0;
            let colour: Vec<f64> = channels
                .split(',')
                .map(|c| c.trim().parse::<f64>())
                .collect::<Result<_, _>>()
                .ok()?;
            let along = (0..3).map(|i| (colour[i] - paper[i]) * way[i]).sum::<f64>() / length;
            let off_line = (0..3)
                .map(|i| (colour[i] - paper[i] - along * way[i]).abs())
                .fold(0.0, f64::max);
            (along >= 0.5 && off_line <= 16.0).then(|| count.trim().parse::<u64>().ok())?
        })
        .sum()
}

/// The standard deviation of the region's pixels (0 to 1), its border shaved off: a
/// card whose contents are not painted is one flat colour inside its outline.
fn inner_spread(png: &Path) -> f64 {
    let out = Command::new("convert")
        .arg(png)
        .args([
            "-shave",
            "4x4",
            "-format",
            "%[fx:standard_deviation]",
            "info:",
        ])
        .output()
        .expect("ImageMagick's convert runs (apt install imagemagick)");
    assert!(out.status.success(), "convert failed on {}", png.display());
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|err| panic!("convert's measure of {}: {err}", png.display()))
}

/// The text Tesseract reads in the region, enlarged first: screen text is small for it.
fn ocr(png: &Path) -> String {
    let large = png.with_extension("ocr.png");
    let status = Command::new("convert")
        .arg(png)
        .args(["-resize", "300%", "-colorspace", "Gray"])
        .arg(&large)
        .status()
        .expect("ImageMagick's convert runs");
    assert!(
        status.success(),
        "convert could not enlarge {}",
        png.display()
    );
    let out = Command::new("tesseract")
        .arg(&large)
        .args(["stdout", "--psm", "6"])
        .output()
        .expect("tesseract runs (apt install tesseract-ocr)");
    assert!(
        out.status.success(),
        "tesseract failed on {}: {}",
        large.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Letters and digits only, lower case: OCR reads `write_file` as `write file` or
/// `writefile` depending on the font's underscore.
pub fn letters(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Panics unless every word of `expected` can be read in `seen`.
pub fn assert_reads(seen: &str, expected: &[&str], what: &str) {
    let flat = letters(seen);
    for word in expected {
        assert!(
            flat.contains(&letters(word)),
            "{what}: {word:?} cannot be read on the screen; OCR read {seen:?}"
        );
    }
}
