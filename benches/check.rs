//! Checking time of generated nets (parse + compose + flatten + post-processing): a pipeline
//! of stages, each a fan of four workers (`!` bundles the inputs and the outputs with routing
//! nodes, `.` joins consecutive fans, whose routing nodes are then merged), and a chain of
//! wrapper instances (flattening, renaming routing nodes). The time should grow linearly
//! with the number of boxes.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use smx_lang::compose::{CompileOptions, compile, compose};
use smx_lang::diag::SourceFile;

/// A net of about `boxes` boxes.
fn pipeline(boxes: usize) -> String {
    let stages = (boxes.saturating_sub(2) / 4).max(1);
    let mut s = String::from("S = box src(out x0)\n");
    for i in 0..stages {
        s.push_str(&format!("W{i} = box work(in x{i}, out x{})\n", i + 1));
    }
    s.push_str(&format!("K = box sink(in x{stages})\nconnect S"));
    for i in 0..stages {
        s.push_str(&format!(".(W{i}!W{i}!W{i}!W{i})"));
    }
    s.push_str(".K\n");
    s
}

/// A chain of about `boxes / 2` wrapper instances, each holding two boxes and renaming its
/// output (exercises flattening and routing-node reduction).
fn wrappers(boxes: usize) -> String {
    let mut s = String::from(
        "S = box src(out x)\nK = box sink(in x)\n\
         wrapper W(up in x, down out x(z)) {\n  A = box a(in x, out m)\n  B = box b(in m, out z)\n  connect A.B\n\
         } net(up in x, down out z)\nconnect S",
    );
    for _ in 0..(boxes / 2).max(1) {
        s.push_str(".W");
    }
    s.push_str(".K\n");
    s
}

fn check(c: &mut Criterion) {
    let opts = CompileOptions::default();
    let mut group = c.benchmark_group("check");
    group.sample_size(10);
    for (shape, boxes) in [2_500, 5_000, 10_000]
        .into_iter()
        .flat_map(|n| [("fans", n), ("wrappers", n)])
    {
        let text = if shape == "fans" {
            pipeline(boxes)
        } else {
            wrappers(boxes)
        };
        let src = SourceFile::new("bench.smx", text);
        let probe = compile(&src, &opts);
        assert!(
            probe.accepted(),
            "generated net rejected: {:?}",
            probe.diagnostics.first()
        );
        group.throughput(Throughput::Elements(boxes as u64));
        group.bench_with_input(
            BenchmarkId::new(format!("{shape}/parse+compose"), boxes),
            &src,
            |b, src| b.iter(|| compile(src, &opts)),
        );
        let parsed = smx_lang::syntax::parse(&src);
        if let Some(program) = parsed.program {
            group.bench_with_input(BenchmarkId::new(format!("{shape}/compose"), boxes), &program, |b, p| {
                b.iter(|| compose(p, &opts))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, check);
criterion_main!(benches);
