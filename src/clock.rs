//! Times as aayu writes them: UTC, to the second.

/// A UTC time to the second, as `2026-11-29T15:30:00Z` (RFC 3339), or `20261129T153000Z` when `compact`
/// (a folder name).
pub(crate) fn utc_stamp(now: time::OffsetDateTime, compact: bool) -> String {
    let t = now.to_offset(time::UtcOffset::UTC);
    let (date_sep, time_sep) = if compact { ("", "") } else { ("-", ":") };
    format!(
        "{:04}{date_sep}{:02}{date_sep}{:02}T{:02}{time_sep}{:02}{time_sep}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_stamps_are_utc_to_the_second() {
        let t = time::macros::datetime!(2026-11-29 16:30:05 +1);
        assert_eq!(super::utc_stamp(t, false), "2026-11-29T15:30:05Z");
        assert_eq!(super::utc_stamp(t, true), "20261129T153005Z");
    }
}
