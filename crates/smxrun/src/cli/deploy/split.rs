//! `smxrun split`: a net over several processes cut into one slice per process, each with
//! the script and the systemd unit that start it.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use smx_deploy::processes::shell_word;
use smx_deploy::protocol;
use smx_runtime::Registry;

use crate::cli::args::SplitArgs;
use crate::cli::exit::{self, CliError};
use crate::cli::output::{Output, file_in_the_way, why_no_directory};
use crate::cli::{load, words};

use super::{Purpose, check_pin_here, common_args, deployment, with_channel_len};

/// Writes, per process: NAME.job (its slice and settings, mode 0600), NAME.sh (the line that
/// starts it) and smx-NAME.service (a systemd unit with its cores and scheduling policy).
pub fn split(args: &SplitArgs, registry: &Registry) -> Result<i32, CliError> {
    // The links' own timeouts are in whole milliseconds; less is no wait at all.
    if let Some(timeout) = args.link_timeout.filter(|t| *t > MAX_LINK_TIMEOUT) {
        return Err(CliError::rejected(format!(
            "--link-timeout {}s: longer than a link may wait for the process at its other end, at most {}s (a day)",
            timeout.as_secs(),
            MAX_LINK_TIMEOUT.as_secs()
        )));
    }
    if let Some(timeout) = args.link_timeout.filter(|t| t.as_millis() == 0) {
        let timeout = if timeout.is_zero() {
            "0".to_string()
        } else {
            format!("{timeout:?}")
        };
        return Err(CliError::rejected(format!(
            "--link-timeout {timeout}: every link would give up on the process at its other end before it \
             could connect; give the time a link waits for it, at least 1ms (e.g. --link-timeout 120s)"
        )));
    }
    let mut layers = smx_runtime::config::ConfigLayers::from_file(&args.config)?;
    for set in &args.sets {
        layers.add_set(set)?;
    }
    if let Some(n) = args.iterations {
        layers.set_iterations(n);
    }
    let graph = load::checked_graph(&args.file)?;
    let library_paths = load::library_paths(layers.boxes(), &args.boxes);
    let libraries = load::open_libraries(&library_paths)?;
    let registry = &load::with_c_boxes(&graph, registry, &libraries)?;
    load::reject_unknown_implementations(&args.file, &graph, registry, &libraries.names())?;
    let settings = layers.resolve(&graph, registry)?;
    let graph = with_channel_len(&graph, args.runtime.channel_len);
    if graph.nodes.is_empty() {
        return Err(CliError::rejected(format!(
            "{}: the net holds no box: there is nothing to split",
            args.file.display()
        )));
    }
    let placed = deployment(&layers, &args.file, &graph, &settings, registry, Purpose::Start)?;
    let mut deployment = placed
        .deployment
        .ok_or_else(|| CliError::rejected("every net runs in `main` on this machine: there is nothing to split"))?;
    deployment.said = placed.warnings;
    deployment.asked = words::asked_options(&args.file, args.iterations, &args.sets, Some(&args.config));
    check_pin_here(&deployment, &args.runtime.pin)?;
    let names: Vec<&str> = deployment.split.slices.iter().map(|s| s.process.as_str()).collect();
    let dir = output_dir(&args.output, &names)?;
    let exe = std::env::current_exe().map_err(|e| CliError::rejected(format!("cannot find smxrun itself: {e}")))?;
    // The configuration's relative paths (a box's `file`) are relative to where split ran, as
    // they are to where a run runs: each slice starts there too, wherever it is started from.
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::rejected(format!("cannot read the directory split runs in: {e}")))?;
    let unit_cwd = unit_path(&cwd);
    if unit_cwd.is_none() {
        crate::cli::say(&format!(
            "warning: {}: a systemd unit cannot name this directory (a line break, or white space at its end): \
             the units start their processes in the root directory, where relative paths of the configuration \
             do not reach",
            cwd.display()
        ));
    }
    let mut written = Vec::new();
    for (slice, (process, mut job)) in deployment
        .split
        .slices
        .iter()
        .zip(deployment.jobs(&common_args(&args.runtime, &library_paths)))
    {
        if let Some(timeout) = args.link_timeout {
            job.args.extend(link_timeouts(slice, &job.graph, timeout));
        }
        let name = &process.name;
        let job_path = dir.join(format!("{name}.job"));
        write_private(&job_path, &job.to_line())?;
        let report = dir.join(format!("{name}{REPORT_SUFFIX}"));
        // The words of the command that runs the slice, as the supervisor would start it.
        let command: Vec<String> = vec![
            exe.display().to_string(),
            protocol::SUBCOMMAND.to_string(),
            "--process".to_string(),
            name.clone(),
            "--job".to_string(),
            job_path.display().to_string(),
            "--report".to_string(),
            report.display().to_string(),
        ];
        // `launch` split into its words and the words after it quoted for a remote shell, as
        // the supervisor starts it: behind `ssh`, the script's own quotes are gone and the
        // remote shell reads each path again.
        let launched = process.launch_words(&command);
        let launched: Vec<&str> = launched.iter().map(String::as_str).collect();
        let script = dir.join(format!("{name}.sh"));
        write_private(
            &script,
            &format!(
                "#!/bin/sh\n# starts process '{name}' of the split net, in the directory split ran in (the \
                 configuration's relative paths are relative to it)\ncd {} || exit 1\nexec {}\n",
                shell_word(&cwd.display().to_string()),
                shell_line(&launched)
            ),
        )?;
        set_mode(&script, 0o700)?;
        let realtime = args.runtime.rt == smx_runtime::Realtime::On
            || job.graph.nodes.iter().any(|n| n.priority > 0)
            || job.args.iter().any(|a| a.contains(".priority="));
        let cores = process.cores.as_deref().or(job.cores_allowed.as_deref());
        let unit = unit(
            name,
            &args.file,
            &command,
            unit_cwd.as_deref(),
            cores,
            realtime,
            process.launch.as_deref(),
        );
        write_private(&dir.join(format!("smx-{name}.service")), &unit)?;
        written.push(format!("{name}: {}", shell_word(&script.display().to_string())));
    }
    let mut merge: Vec<String> = ["smxrun", "report", "merge"].map(str::to_string).to_vec();
    merge.extend(
        deployment
            .split
            .slices
            .iter()
            .map(|s| dir.join(format!("{}{REPORT_SUFFIX}", s.process)).display().to_string()),
    );
    let merge: Vec<&str> = merge.iter().map(String::as_str).collect();
    Output::open(None)?.write(&format!(
        "{}\nwhen all have ended: {}\n",
        written.join("\n"),
        shell_line(&merge)
    ))?;
    Ok(exit::OK)
}

/// The name of the file in which a split lists the files it wrote into its directory: a later
/// split into that directory replaces those and refuses a directory that holds any other.
const WRITTEN: &str = ".smx-split";

/// How the report a slice writes into the split's directory is named after its process.
const REPORT_SUFFIX: &str = ".report.json";

/// The files a split of `processes` writes, and the reports its slices write, in its directory.
fn split_files(processes: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    for name in processes {
        files.extend([
            format!("{name}.job"),
            format!("{name}.sh"),
            format!("smx-{name}.service"),
            format!("{name}{REPORT_SUFFIX}"),
        ]);
    }
    files
}

/// The directory `-o` names, ready for the files of a split of `processes`: made (mode 0700: it
/// holds the links' secret keys) when it is not there; else it must be empty or hold only what a
/// split wrote there before (as its list [`WRITTEN`] says), which goes, so that no slice of that
/// split is taken for one of this. A report of its slices stops it: that is a run's result. A
/// directory that is there keeps its mode, and a file split did not write is never touched.
fn output_dir(dir: &Path, processes: &[&str]) -> Result<std::path::PathBuf, CliError> {
    let fail = |e: std::io::Error| CliError::rejected(format!("{}: {e}", dir.display()));
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(CliError::rejected(format!(
                "{}: not a directory: -o names the directory split writes its files into",
                dir.display()
            )));
        }
        Ok(_) => {}
        // Not there, or a file stands where a directory on its way would: to be made, which
        // then says what stands in the way.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            use std::os::unix::fs::DirBuilderExt;
            let cannot_create = |at: &Path, e: std::io::Error| {
                let why = match why_no_directory(at, &e) {
                    why if at == dir || file_in_the_way(at).is_some() => format!(": {why}"),
                    why => format!(" (its parent {}): {why}", at.display()),
                };
                CliError::rejected(format!(
                    "{}: cannot create the directory split writes into{why}",
                    dir.display()
                ))
            };
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| cannot_create(parent, e))?;
            }
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .map_err(|e| cannot_create(dir, e))?;
            let dir = std::fs::canonicalize(dir).map_err(fail)?;
            write_list(&dir, processes)?;
            return Ok(dir);
        }
        Err(e) => return Err(fail(e)),
    }
    let dir = std::fs::canonicalize(dir).map_err(fail)?;
    let mut present: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(fail)? {
        present.push(entry.map_err(fail)?.file_name().to_string_lossy().into_owned());
    }
    present.sort();
    let listed = std::fs::read_to_string(dir.join(WRITTEN)).ok();
    let earlier: Vec<&str> = listed
        .as_deref()
        .unwrap_or("")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    if let Some(foreign) = present.iter().find(|p| *p != WRITTEN && !earlier.contains(&p.as_str())) {
        return Err(CliError::rejected(format!(
            "{}: the directory holds '{foreign}', which `smxrun split` did not write: split writes \
             into a new or empty directory, or into one an earlier split wrote, whose files it replaces; it \
             never overwrites another file",
            dir.display()
        )));
    }
    // A slice's report is a run's result, not a file of the split: it is merged or moved by
    // its user, never replaced by the next split.
    if let Some(report) = present.iter().find(|p| p.ends_with(REPORT_SUFFIX)) {
        return Err(CliError::rejected(format!(
            "{}: the directory holds '{report}', the report of a run of the split there: move the \
             reports away (once merged, `smxrun report merge`) or split into another directory; split \
             replaces the files it wrote, never a run's results",
            dir.display()
        )));
    }
    // The earlier split's files go before its list: a split cut short is still recognised.
    for name in present.iter().filter(|p| *p != WRITTEN) {
        let path = dir.join(name);
        std::fs::remove_file(&path).map_err(|e| CliError::rejected(format!("{}: {e}", path.display())))?;
    }
    write_list(&dir, processes)?;
    Ok(dir)
}

/// The list of the files a split of `processes` writes into `dir`, and its slices' reports.
fn write_list(dir: &Path, processes: &[&str]) -> Result<(), CliError> {
    let mut text = "# the files `smxrun split` wrote here and those its slices write; a later split into this \
                    directory replaces the first, and refuses while one of the second is here\n"
        .to_string();
    for file in split_files(processes) {
        text.push_str(&file);
        text.push('\n');
    }
    let path = dir.join(WRITTEN);
    let _ = std::fs::remove_file(&path);
    write_private(&path, &text)
}

/// The longest `--link-timeout`: a day, as long as a link's sink waits at its end for its
/// receiver (`smx_deploy::slice::LINK_LINGER`); longer waits are a mistake, and their
/// milliseconds could overflow what a slice reads back.
const MAX_LINK_TIMEOUT: Duration = smx_deploy::slice::LINK_LINGER;

/// `--set` of `timeout` on every link box of `slice` (`graph` is its graph).
fn link_timeouts(slice: &smx_deploy::slice::Slice, graph: &smx_graph::NetGraph, timeout: Duration) -> Vec<String> {
    use smx_deploy::slice::Origin;
    slice
        .origins
        .iter()
        .enumerate()
        .filter(|(_, origin)| matches!(origin, Origin::LinkSink(_) | Origin::LinkSource(_)))
        .flat_map(|(id, _)| {
            [
                "--set".to_string(),
                format!("{}#{id}.timeout={}ms", graph.nodes[id].label, timeout.as_millis()),
            ]
        })
        .collect()
}

/// The systemd unit of process `name`, started by the words of `command` in `cwd` (as
/// [`unit_path`] gives it): its cores as `CPUAffinity`, and when a net of it has a priority
/// (`realtime`) the limits that let the runtime use them. The unit is installed on the
/// process's host and runs `smxrun` there itself, so a `launch` that reaches the host (`ssh`)
/// has no place in it; one that starts the process in a network namespace becomes the unit's
/// `NetworkNamespacePath`, and any other is named in a comment, since the unit does not do it.
fn unit(
    name: &str,
    net: &Path,
    command: &[String],
    cwd: Option<&str>,
    cores: Option<&[usize]>,
    realtime: bool,
    launch: Option<&str>,
) -> String {
    let exec: Vec<String> = command.iter().map(|w| unit_word(w)).collect();
    let mut unit = format!(
        "[Unit]\nDescription=smx: process '{}' of {}\n\n[Service]\nType=exec\nExecStart={}\n",
        unit_text(name),
        unit_text(&net.display().to_string()),
        exec.join(" ")
    );
    if let Some(cwd) = cwd {
        unit.push_str(&format!("WorkingDirectory={cwd}\n"));
    }
    match launch {
        Some(launch) if let Some(namespace) = smx_deploy::processes::network_namespace(launch) => {
            unit.push_str(&format!(
                "# launch '{}': the namespace `ip netns add` made\nNetworkNamespacePath=/run/netns/{}\n",
                unit_text(launch),
                unit_text(&namespace)
            ));
        }
        Some(launch) if smx_deploy::processes::remote_shells(launch) == 0 => {
            unit.push_str(&format!(
                "# launch '{}' is not applied here: this unit runs smxrun itself; give the unit what that \
                 prefix did\n",
                unit_text(launch)
            ));
        }
        _ => {}
    }
    if let Some(cores) = cores {
        let list: Vec<String> = cores.iter().map(usize::to_string).collect();
        unit.push_str(&format!("CPUAffinity={}\n", list.join(" ")));
    }
    // The process starts at normal scheduling, as `smxrun` does: the runtime itself gives
    // each net with a priority (an `rt` or `tt` net, a `priority` key) SCHED_FIFO at its
    // own level, which a policy for the whole unit would override for every thread.
    unit.push_str("CPUSchedulingPolicy=other\n");
    if realtime {
        unit.push_str(
            "# lets the runtime give the nets with a priority SCHED_FIFO\nLimitRTPRIO=99\nLimitMEMLOCK=infinity\n",
        );
    }
    // Enabled, it starts with the machine; the orchestrator may start it itself instead.
    unit.push_str("\n[Install]\nWantedBy=multi-user.target\n");
    unit
}

/// Whether `word` means itself to a POSIX shell and to systemd, unquoted.
fn plain_word(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-+=@,./:".contains(c))
}

/// The words as one line of a POSIX shell.
fn shell_line(words: &[&str]) -> String {
    words.iter().map(|w| shell_word(w)).collect::<Vec<_>>().join(" ")
}

/// `word` as one word of a unit's command line: `%` (a specifier) and `$` (a variable)
/// doubled, and, when it is not plain, in double quotes with backslashes, double quotes and
/// line breaks escaped as C escapes.
fn unit_word(word: &str) -> String {
    let doubled = word.replace('%', "%%").replace('$', "$$");
    if plain_word(word) {
        return doubled;
    }
    let escaped = doubled.replace('\\', r"\\").replace('"', r#"\""#).replace('\n', r"\n");
    format!("\"{escaped}\"")
}

/// `path` as a unit's path setting (`WorkingDirectory=`) takes it: systemd reads such a value
/// as it stands, quotes and all, but for its specifiers, so `%` is doubled and nothing quoted.
/// `None` for a path a unit cannot hold: one with a line break, or with white space at its end
/// (which systemd strips).
fn unit_path(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    if text.contains('\n') || text.ends_with(char::is_whitespace) {
        return None;
    }
    Some(text.replace('%', "%%"))
}

/// `text` as a unit's value takes it: `%` doubled (it starts a specifier), on one line.
fn unit_text(text: &str) -> String {
    text.replace('%', "%%").replace('\n', " ")
}

fn write_private(path: &Path, text: &str) -> Result<(), CliError> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |e: std::io::Error| CliError::rejected(format!("{}: {e}", path.display()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(fail)?;
    set_mode(path, 0o600)?;
    file.write_all(text.as_bytes()).map_err(fail)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), CliError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| CliError::rejected(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_word_is_quoted_only_when_the_shell_would_read_it() {
        assert_eq!(shell_word("/usr/bin/smxrun"), "/usr/bin/smxrun");
        assert_eq!(shell_word("/tmp/with space"), "'/tmp/with space'");
        assert_eq!(shell_word("it's $HOME"), r"'it'\''s $HOME'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn a_unit_path_stands_as_it_is_but_for_its_specifiers() {
        assert_eq!(
            unit_path(Path::new("/srv/with space")).as_deref(),
            Some("/srv/with space")
        );
        assert_eq!(unit_path(Path::new("/srv/50%\"q\"")).as_deref(), Some("/srv/50%%\"q\""));
        assert_eq!(unit_path(Path::new("/srv/line\nbreak")), None);
        assert_eq!(unit_path(Path::new("/srv/trailing ")), None);
    }

    #[test]
    fn a_unit_word_keeps_specifiers_variables_quotes_and_backslashes_literal() {
        assert_eq!(unit_word("/usr/bin/smxrun"), "/usr/bin/smxrun");
        assert_eq!(unit_word("/tmp/with space"), "\"/tmp/with space\"");
        assert_eq!(unit_word("50%"), "\"50%%\"");
        assert_eq!(unit_word("$HOME"), "\"$$HOME\"");
        assert_eq!(unit_word(r#"a"b\c"#), r#""a\"b\\c""#);
    }

    /// A unit runs `smxrun` on the process's host itself: a namespace its launch enters becomes
    /// the unit's, a remote shell's launch is left out, and any other is named as not applied.
    #[test]
    fn a_units_launch_is_its_namespace_or_a_note() {
        let command = ["/usr/bin/smxrun".to_string(), "__slice".to_string()];
        let unit_of = |launch: Option<&str>| unit("b", Path::new("n.smx"), &command, None, None, false, launch);
        let in_namespace = unit_of(Some("ip netns exec smxq2"));
        assert!(
            in_namespace.contains("\nNetworkNamespacePath=/run/netns/smxq2\n"),
            "{in_namespace}"
        );
        assert!(
            in_namespace.contains("\nExecStart=/usr/bin/smxrun __slice\n"),
            "{in_namespace}"
        );
        for remote in [None, Some("ssh user@host")] {
            let unit = unit_of(remote);
            assert!(
                !unit.contains("NetworkNamespacePath") && !unit.contains("launch"),
                "{unit}"
            );
        }
        let other = unit_of(Some("sudo -u smx"));
        assert!(other.contains("# launch 'sudo -u smx' is not applied here"), "{other}");
    }
}
