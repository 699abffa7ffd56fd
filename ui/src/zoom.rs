//! Page zoom steps for Ctrl+= / Ctrl+- / Ctrl+0, as browsers take them.

/// The zooms the keys step through, in percent.
const STEPS: [u16; 13] = [50, 67, 75, 80, 90, 100, 110, 125, 150, 175, 200, 250, 300];

/// The zoom a key asks for from `current`, or `None` if the key is not a zoom key
/// or the zoom cannot go further that way.
pub fn step(current: u16, key: &str) -> Option<u16> {
    let next = match key {
        "=" | "+" => STEPS.iter().copied().find(|&step| step > current),
        "-" => STEPS.iter().rev().copied().find(|&step| step < current),
        "0" => Some(100),
        _ => None,
    }?;
    (next != current).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_step_through_the_zooms_and_stop_at_the_ends() {
        assert_eq!(step(100, "="), Some(110));
        assert_eq!(step(100, "+"), Some(110));
        assert_eq!(step(100, "-"), Some(90));
        assert_eq!(step(175, "="), Some(200));
        assert_eq!(step(300, "="), None);
        assert_eq!(step(50, "-"), None);
        assert_eq!(step(150, "0"), Some(100));
        assert_eq!(step(100, "0"), None, "already at 100%");
        assert_eq!(step(100, "a"), None);
    }

    #[test]
    fn a_zoom_between_steps_goes_to_the_next_step() {
        assert_eq!(step(105, "="), Some(110));
        assert_eq!(step(105, "-"), Some(100));
    }
}
