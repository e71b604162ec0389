//! A crate outside this repository that follows the guide (a box of its own, one line of
//! `main` over `smxrun::main_with_boxes(&[SPEC])`) gets the same smxrun as this repository's
//! binary: it compiles, and its libzmq has CURVE although this workspace's
//! `.cargo/config.toml` does not apply to it (zmq-sys then builds a libzmq of its own without
//! CURVE, which must not be the one linked).
//!
//! Ignored by default: it builds the whole tree once more in a target directory of its own
//! (minutes). Run it with `cargo test --release --test user_crate -- --ignored`; it builds
//! offline, from the crates already fetched for this workspace.

use std::path::Path;
use std::process::Command;

const MAIN: &str = r#"
use smx_box::prelude::*;

pub const SCALE: BoxSpec = BoxSpec::named("scale")
    .inputs(&[PortSpec::new("x")])
    .outputs(&[PortSpec::new("y")])
    .config(&[ConfigKey::float("factor").default_value("2.0")])
    .create(|config| Ok(Box::new(Scale { factor: config.float("factor")? })));

struct Scale {
    factor: f64,
}

impl BoxImpl for Scale {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let Some(msg) = io.read(InPort(0)) else { return Ok(Flow::Return) };
        let bytes: [u8; 8] = msg.payload().try_into().map_err(|_| BoxError::new("not an f64"))?;
        let y = f64::from_le_bytes(bytes) * self.factor;
        let _ = io.write(OutPort(0), msg.with_payload(&y.to_le_bytes()));
        Ok(Flow::Return)
    }
}

fn main() {
    std::process::exit(smxrun::main_with_boxes(&[SCALE]));
}
"#;

#[test]
#[ignore = "builds the whole tree in a crate outside the repository (minutes)"]
fn a_box_crate_outside_the_repository_gets_curve() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Outside the repository, so that no .cargo/config.toml of it applies.
    let dir = tempfile::tempdir().unwrap();
    assert!(!dir.path().starts_with(repo));
    let manifest = format!(
        "[package]\nname = \"my-boxes\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\n\
         smx-box = {{ path = \"{0}/crates/smx-box\" }}\nsmxrun = {{ path = \"{0}\" }}\n",
        repo.display()
    );
    std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), MAIN).unwrap();
    std::fs::copy(repo.join("Cargo.lock"), dir.path().join("Cargo.lock")).unwrap();
    let target = repo.join("target/user-crate");
    let build = Command::new(env!("CARGO"))
        .args(["build", "--release", "--offline"])
        .current_dir(dir.path())
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", String::from_utf8_lossy(&build.stderr));
    let program = target.join("release/my-boxes");
    let keys = Command::new(&program).arg("keygen").output().unwrap();
    assert!(
        keys.status.success(),
        "no CURVE: {}",
        String::from_utf8_lossy(&keys.stderr)
    );
    assert!(String::from_utf8_lossy(&keys.stdout).contains("curve_secret = \""));
    let boxes = Command::new(&program).args(["boxes", "scale"]).output().unwrap();
    assert!(String::from_utf8_lossy(&boxes.stdout).contains("in x"));
}
