//! Tests of layered configuration against a small hand-made graph and registry.

use super::*;
use smx_box::{BoxError, BoxImpl, ConfigKey, ConfigValue, PortSpec};
use smx_graph::Location;

fn never_built(_: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Err(BoxError::new("only a spec for configuration tests"))
}

const SRC_KEYS: &[ConfigKey] = &[
    ConfigKey::int("count").default_value("1000"),
    ConfigKey::int("size").default_value("8"),
    ConfigKey::int("seed"),
];

const SNK_KEYS: &[ConfigKey] = &[
    ConfigKey::choice("mode", &["text", "hex"]).default_value("text"),
    ConfigKey::float("above").default_value("25"),
];

const PORT: &[PortSpec] = &[PortSpec::new("data")];

fn registry() -> Registry {
    let mut r = Registry::empty();
    r.register(
        BoxSpec::named("t_src")
            .outputs(PORT)
            .config(SRC_KEYS)
            .create(never_built),
    );
    r.register(
        BoxSpec::named("t_snk")
            .outputs(PORT)
            .config(SNK_KEYS)
            .create(never_built),
    );
    r
}

fn node(id: usize, label: &str, func: &str, kind: NodeKind) -> Node {
    Node {
        id,
        label: label.into(),
        func: func.into(),
        kind,
        is_static: false,
        pure: false,
        location: Location::Local,
        priority: 0,
        line: 1,
        ports: Vec::new(),
    }
}

/// `Src|Src` fanning into one `Snk` through a routing node.
fn graph() -> NetGraph {
    NetGraph {
        nodes: vec![
            node(0, "Src", "t_src", NodeKind::Box),
            node(1, "Src", "t_src", NodeKind::Box),
            node(2, "smx_rn", "smx_rn", NodeKind::RoutingNode),
            node(3, "Snk", "t_snk", NodeKind::Box),
        ],
        edges: Vec::new(),
    }
}

fn layers(toml: &str) -> ConfigLayers {
    let mut l = ConfigLayers::from_toml(Path::new("run.toml"), toml).unwrap();
    l.set_available_cores(vec![0, 1]);
    l
}

fn resolve(l: &ConfigLayers) -> Result<Vec<NetSettings>, ConfigError> {
    l.resolve(&graph(), &registry())
}

fn int(s: &NetSettings, key: &str) -> Option<u64> {
    match s.box_config.get(key) {
        Some(ConfigValue::Int(v)) => Some(*v),
        _ => None,
    }
}

#[test]
fn defaults_fill_every_box_and_routing_nodes_get_none() {
    let got = resolve(&layers("")).unwrap();
    assert_eq!(got.len(), 4);
    assert_eq!(int(&got[0], "count"), Some(1000));
    assert_eq!(int(&got[1], "size"), Some(8));
    assert_eq!(int(&got[0], "seed"), None);
    assert_eq!(got[0].box_config.instance, "Src");
    assert_eq!(got[0].box_config.implementation, "t_src");
    assert_eq!(got[2], NetSettings::default());
    assert_eq!(got[3].box_config.get("mode"), Some(&ConfigValue::Str("text".into())));
}

#[test]
fn file_tables_go_from_general_to_specific() {
    let l = layers(
        "[net.\"Src#1\"]\ncount = 4\n[net.Src]\ncount = 3\nsize = 16\n[impl.t_src]\ncount = 2\nseed = 9\n\
         [default]\ncount = 1\nnice = 5\n",
    );
    let got = resolve(&l).unwrap();
    assert_eq!(int(&got[0], "count"), Some(3), "instance beats impl and default");
    assert_eq!(int(&got[1], "count"), Some(4), "node id beats instance");
    assert_eq!(int(&got[0], "size"), Some(16));
    assert_eq!(int(&got[1], "seed"), Some(9));
    assert!(
        got.iter().all(|s| s.nice == Some(5)),
        "runtime keys of [default] reach every node"
    );
    assert_eq!(
        got[3].box_config.get("count"),
        None,
        "a [default] key the box lacks is skipped"
    );
}

#[test]
fn command_line_beats_file_and_instance_beats_impl() {
    let mut l = layers("[net.Src]\ncount = 3\nsize = 16\n");
    l.set_iterations(50);
    let got = resolve(&l).unwrap();
    assert_eq!(int(&got[0], "count"), Some(50), "-n beats the file");
    assert_eq!(int(&got[0], "size"), Some(16));

    l.add_set("Src.count=7").unwrap();
    l.add_set("t_src.count=8").unwrap();
    l.add_set("Src#0.size=32").unwrap();
    let got = resolve(&l).unwrap();
    assert_eq!(
        int(&got[0], "count"),
        Some(7),
        "--set instance beats --set impl given later"
    );
    assert_eq!(int(&got[0], "size"), Some(32));
    assert_eq!(int(&got[1], "size"), Some(16));
}

#[test]
fn later_sets_of_the_same_target_win() {
    let mut l = layers("");
    l.add_set("Snk.mode=hex").unwrap();
    l.add_set("Snk.mode = text").unwrap();
    l.add_set("smx_rn.core=1").unwrap();
    let got = resolve(&l).unwrap();
    assert_eq!(got[3].box_config.get("mode"), Some(&ConfigValue::Str("text".into())));
    assert_eq!(got[2].core, Some(1), "routing nodes take runtime keys");
}

#[test]
fn iterations_only_touch_boxes_with_a_count() {
    let mut l = layers("");
    l.set_iterations(5);
    let got = resolve(&l).unwrap();
    assert_eq!(int(&got[1], "count"), Some(5));
    assert_eq!(got[3].box_config.get("count"), None);
}

#[test]
fn unknown_key_in_a_set_names_key_net_origin_and_choices() {
    let mut l = layers("");
    l.add_set("Src.cnt=5").unwrap();
    let err = resolve(&l).unwrap_err();
    assert_eq!(err.origin, Origin::Override("Src.cnt=5".into()));
    assert_eq!(err.key.as_deref(), Some("cnt"));
    assert_eq!(err.net.as_deref(), Some("Src"));
    assert_eq!(
        err.choices,
        vec![
            "count",
            "size",
            "seed",
            "core",
            "priority",
            "nice",
            "expected_rate",
            "process"
        ]
    );
    assert_eq!(
        err.to_string(),
        "override 'Src.cnt=5': key 'cnt' of net 'Src': unknown key \
         (valid: count, size, seed, core, priority, nice, expected_rate, process); did you mean 'count'?"
    );
}

#[test]
fn bad_values_name_the_file_line() {
    let err = resolve(&layers("[net.Snk]\n\nmode = \"octal\"\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "run.toml:3: key 'mode' of net 'Snk': 'octal' is not one of: text, hex"
    );
    let err = resolve(&layers("[net.Src]\ncount = -1\n")).unwrap_err();
    assert!(err.to_string().contains("not a non-negative integer"), "{err}");
    let err = resolve(&layers("[default]\npriority = 0\n")).unwrap_err();
    assert!(
        err.to_string().starts_with("run.toml:2: key 'priority' of net 'Src'"),
        "{err}"
    );
    let err = resolve(&layers("[net.Src]\ncore = 7\n")).unwrap_err();
    assert!(err.to_string().contains("available: 0, 1"), "{err}");
}

#[test]
fn a_toml_float_is_a_number_key_s_value_and_an_integer_key_refuses_it() {
    let settings = resolve(&layers("[net.Snk]\nabove = 22.5\n")).unwrap();
    let snk = settings.iter().find(|s| s.box_config.instance == "Snk").unwrap();
    assert_eq!(snk.box_config.get("above"), Some(&ConfigValue::Float(22.5)));
    let err = resolve(&layers("[net.Src]\n\ncount = 2.5\n")).unwrap_err();
    assert!(
        err.to_string().starts_with("run.toml:3: key 'count' of net 'Src'"),
        "{err}"
    );
}

#[test]
fn impl_tables_are_checked_even_when_unused() {
    let mut r = registry();
    r.register(
        BoxSpec::named("t_other")
            .outputs(PORT)
            .config(SRC_KEYS)
            .create(never_built),
    );
    let l = layers("[impl.t_other]\nsize = \"many\"\n");
    let err = l.resolve(&graph(), &r).unwrap_err();
    assert_eq!(err.net.as_deref(), Some("t_other"));
    assert_eq!(err.key.as_deref(), Some("size"));
    let err = resolve(&layers("[impl.t_snk]\ncount = 3\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "run.toml:2: key 'count' of implementation 't_snk': unknown key (valid: mode, above, core, priority, nice, expected_rate, process)"
    );
    let err = resolve(&layers("[impl.smx_rn]\nsize = 3\n")).unwrap_err();
    assert_eq!(
        err.choices,
        vec!["core", "priority", "nice", "expected_rate", "process"]
    );
}

#[test]
fn unknown_targets_list_what_exists() {
    let err = resolve(&layers("[impl.t_nope]\ncount = 1\n")).unwrap_err();
    assert!(err.to_string().contains("unknown implementation 't_nope'"), "{err}");
    assert_eq!(err.choices, vec!["t_snk", "t_src", "smx_rn"]);
    let err = resolve(&layers("[net.Sink]\ncount = 1\n")).unwrap_err();
    assert!(err.to_string().contains("no instance named 'Sink'"), "{err}");
    assert_eq!(err.choices, vec!["Snk", "Src", "smx_rn"]);
    // A near miss is offered, as for a key.
    assert!(err.to_string().ends_with("; did you mean 'Snk'?"), "{err}");
    let err = resolve(&layers("[impl.t_sbk]\ncount = 1\n")).unwrap_err();
    assert!(err.to_string().ends_with("; did you mean 't_snk'?"), "{err}");
    let mut set = ConfigLayers::new();
    set.add_set("Snkk.count=1").unwrap();
    let err = resolve(&set).unwrap_err();
    assert!(err.to_string().ends_with("; did you mean 'Snk'?"), "{err}");
    let err = resolve(&layers("[net.\"Src#3\"]\ncount = 1\n")).unwrap_err();
    assert_eq!(err.choices, vec!["Src#0", "Src#1"]);
    let err = resolve(&layers("[default]\ncolour = 1\n")).unwrap_err();
    assert!(err.choices.contains(&"count".to_string()) && err.choices.contains(&"mode".to_string()));

    let mut l = layers("");
    l.add_set("Sink.count=1").unwrap();
    let err = resolve(&l).unwrap_err();
    assert!(
        err.to_string().contains("neither an instance nor an implementation"),
        "{err}"
    );
    assert_eq!(err.choices, vec!["Snk", "Src", "smx_rn", "t_snk", "t_src"]);
}

/// A table whose name is misspelt is refused at the line that names it, also when it sets
/// nothing (it was taken in silence then).
#[test]
fn a_table_is_checked_at_its_name_also_when_it_sets_nothing() {
    for (config, said) in [
        ("[net.Sink]\n", "run.toml:1: no instance named 'Sink'"),
        ("[impl.t_snc]\n", "run.toml:1: unknown implementation 't_snc'"),
        ("[net.\"Src#9\"]\n", "run.toml:1: no node 'Src#9'"),
        ("\n[net.Sink]\n\ncount = 1\n", "run.toml:2: no instance named 'Sink'"),
    ] {
        let err = refusal(config);
        assert!(err.starts_with(said), "{config:?}: {err}");
    }
    resolve(&layers("[net.Snk]\n[impl.t_src]\n[impl.smx_rn]\n")).unwrap();
}

/// The error of resolving the configuration file `config`, as it reads.
fn refusal(config: &str) -> String {
    resolve(&layers(config)).unwrap_err().to_string()
}

/// An error in a table that names a node by its id (`[net."Src#1"]`) names it so, not by the
/// label several nodes share.
#[test]
fn an_error_of_a_node_named_by_its_id_names_it_so() {
    let err = refusal("[net.\"Src#1\"]\ncnt = 1\n");
    assert!(err.contains("key 'cnt' of net 'Src#1': unknown key"), "{err}");
    let err = refusal("[net.\"Src#1\"]\ncount = -1\n");
    assert!(err.contains("key 'count' of net 'Src#1'"), "{err}");
    let mut set = ConfigLayers::new();
    set.add_set("Src#1.cnt=1").unwrap();
    let err = resolve(&set).unwrap_err();
    assert!(err.to_string().contains("key 'cnt' of net 'Src#1'"), "{err}");
    let err = resolve(&layers("[net.Src]\ncnt = 1\n")).unwrap_err();
    assert!(err.to_string().contains("key 'cnt' of net 'Src':"), "{err}");
}

#[test]
fn set_syntax_is_checked_when_added() {
    let mut l = ConfigLayers::new();
    for bad in ["Src", "Src.count", "count=5", ".count=5", "Src.=5"] {
        let err = l.add_set(bad).unwrap_err();
        assert!(err.to_string().contains("expected TARGET.key=value"), "{bad}: {err}");
    }
    l.add_set("Snk.path=/tmp/out.txt").unwrap();
    assert_eq!(l.sets[0].key, "path");
    assert_eq!(l.sets[0].value, "/tmp/out.txt");
}

#[test]
fn an_unknown_implementation_in_the_graph_is_an_error() {
    let mut g = graph();
    g.nodes[3].func = "t_gone".into();
    let err = layers("").resolve(&g, &registry()).unwrap_err();
    assert!(
        err.to_string()
            .contains("unknown implementation 't_gone' (instance 'Snk')"),
        "{err}"
    );
    assert_eq!(err.choices, vec!["t_snk", "t_src"]);
}

#[test]
fn a_missing_config_file_is_a_clear_error() {
    let err = ConfigLayers::from_file(Path::new("/nonexistent/run.toml")).unwrap_err();
    assert_eq!(err.to_string(), "/nonexistent/run.toml: config file not found");
}

#[test]
fn the_builtin_boxes_resolve_with_their_defaults_and_iterations() {
    let mut net = crate::builder::NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_dump", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    let graph = net.build();
    let mut l = ConfigLayers::new();
    l.set_iterations(10);
    l.add_set("Snk.format=hex").unwrap();
    let got = l.resolve(&graph, &Registry::of(smx_boxes::specs())).unwrap();
    assert_eq!(int(&got[src], "count"), Some(10));
    assert_eq!(int(&got[src], "size"), Some(8));
    assert_eq!(got[snk].box_config.get("format"), Some(&ConfigValue::Str("hex".into())));
    assert_eq!(got[snk].box_config.get("count"), None);
}

#[test]
fn a_process_given_as_digits_on_the_command_line_is_a_name() {
    // `--set` values are text; a file's `process = 5` is refused (see the file's tests).
    let mut l = layers("[net.Snk]\nprocess = \"7\"\n");
    l.add_set("Src.process=5").unwrap();
    let got = resolve(&l).unwrap();
    let process = |s: &NetSettings| s.process.as_ref().map(|(name, _)| name.clone());
    assert_eq!(process(&got[0]).as_deref(), Some("5"));
    assert_eq!(process(&got[3]).as_deref(), Some("7"));
}
