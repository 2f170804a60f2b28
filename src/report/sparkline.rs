//! Sparklines: a series of counts as one line of block characters, for terminal tables and
//! Markdown.

/// Unicode block sparkline of `counts`, at most `width` characters: adjacent periods are summed
/// when there are more (the last column always ends at the last period). Zero is a space.
pub fn sparkline(counts: &[u64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let per_column = counts.len().div_ceil(width.max(1)).max(1);
    let lead = (per_column - counts.len() % per_column) % per_column;
    let mut columns: Vec<u64> = Vec::new();
    for (i, &n) in counts.iter().enumerate() {
        if (i + lead) % per_column == 0 || columns.is_empty() {
            columns.push(0);
        }
        *columns.last_mut().expect("pushed") += n;
    }
    let max = columns.iter().copied().max().unwrap_or(0);
    columns
        .iter()
        .map(|&n| if n == 0 { ' ' } else { BARS[((n * 8).div_ceil(max) as usize).clamp(1, 8) - 1] })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_scales_to_the_peak_and_sums_when_narrow() {
        assert_eq!(sparkline(&[0, 1, 2, 4, 8], 10), " ▁▂▄█");
        assert_eq!(sparkline(&[1, 1, 1, 0, 0, 2], 3), "█▄█"); // 1+1 | 1+0 | 0+2
        assert_eq!(sparkline(&[5, 1, 1, 0, 0, 0, 1], 3), "█▄▂"); // 5 | 1+1+0 | 0+0+1
        assert_eq!(sparkline(&[0, 0, 0, 9], 2), " █");
        assert_eq!(sparkline(&[], 3), "");
    }
}
