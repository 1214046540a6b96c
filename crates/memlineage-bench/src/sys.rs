//! What the process and the machine look like: peak memory and a one-line description.

use std::fs;

fn status_kib(field: &str) -> Option<u64> {
    let text = fs::read_to_string("/proc/self/status").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Peak resident set size of this process (`VmHWM`), in KiB; `None` where `/proc` is absent.
pub fn peak_rss_kib() -> Option<u64> {
    status_kib("VmHWM:")
}

/// Current resident set size (`VmRSS`), in KiB.
pub fn rss_kib() -> Option<u64> {
    status_kib("VmRSS:")
}

/// Resets the peak RSS to the current RSS (Linux: `5` to `/proc/self/clear_refs`), so that a
/// later [`peak_rss_kib`] is the peak since now. Returns false where that is not possible.
pub fn reset_peak_rss() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The machine in words: CPU model, logical CPUs, memory, kernel.
pub fn machine() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|r| r.split(':').nth(1))
        .map_or_else(
            || std::env::consts::ARCH.to_string(),
            |m| m.trim().to_string(),
        );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem_gib = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kib| format!(", {:.0} GiB RAM", kib as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| format!(", Linux {}", k.trim()))
        .unwrap_or_default();
    format!("{model}, {cpus} logical CPU(s){mem_gib}{kernel}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_is_described() {
        assert!(machine().contains("logical CPU"));
        if let (Some(peak), Some(now)) = (peak_rss_kib(), rss_kib()) {
            assert!(peak >= now / 2);
        }
    }
}
