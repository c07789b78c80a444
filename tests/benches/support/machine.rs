//! This machine: CPU time of this process or its children, CPU pinning, load averages, a run's
//! total time, and what a figures file says about the run that made it.

/// CPU time (user + system) used so far by this process (`RUSAGE_SELF`) or by its waited-for
/// children (`RUSAGE_CHILDREN`, e.g. `redis-benchmark`), seconds.
pub fn rusage_cpu(who: libc::c_int) -> f64 {
    // SAFETY: `getrusage` only writes the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(who, &mut usage), 0, "getrusage");
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Restricts process `pid` (this thread and the threads it starts later, for `None`) to CPU
/// `cpu`; false if the machine has fewer than 2 CPUs or the call failed.
pub fn pin(pid: Option<u32>, cpu: usize) -> bool {
    if std::thread::available_parallelism().map_or(1, |c| c.get()) < 2 && pid.is_none() {
        return false;
    }
    // SAFETY: `sched_setaffinity` only reads the zeroed set it is given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let pid = pid.map_or(0, |p| p as libc::pid_t);
        libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The 1-, 5- and 15-minute load averages (`/proc/loadavg`), to judge how quiet the machine was.
pub fn loadavg() -> String {
    let raw = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    raw.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// When a bench run started, and the machine's load averages then.
pub struct Started {
    /// The start.
    at: std::time::Instant,
    /// [`loadavg`] at the start.
    load: String,
}

impl Started {
    /// Reads the load averages, then the clock.
    pub fn now() -> Started {
        let load = loadavg();
        Started {
            at: std::time::Instant::now(),
            load,
        }
    }

    /// Prints `total <seconds> s; load average before <1 5 15>, after <1 5 15>`.
    pub fn print_total(&self) {
        println!(
            "total {:.1} s; load average before {}, after {}",
            self.at.elapsed().as_secs_f64(),
            self.load,
            loadavg()
        );
    }
}

/// The run that made a figures file: when it finished (UTC), the commit it was built from (with
/// `-dirty` when the work tree had changes), the host, its CPUs and load. Figures from this
/// shared machine move between runs, so a reader needs to know which run and machine they are
/// from (scripts/bench_report.py prints this beside each benchmark).
pub fn run_info() -> serde_json::Value {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).map(|c| {
        match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(s) if !s.is_empty() => format!("{c}-dirty"),
            _ => c,
        }
    });
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok();
    serde_json::json!({
        "finished_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "commit": commit,
        "host": host,
        // The machine's, not this process's: a bench pinned to one CPU (`pin`) still ran on all.
        // SAFETY: `sysconf` only reads a system setting.
        "cpus": unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) },
        "cpu_model": cpu_model,
        "loadavg": loadavg(),
    })
}
