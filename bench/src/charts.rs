//! SVG charts of a run: latency percentiles and throughput over time.
//! SVG only, so no font or image libraries are built.

use crate::report::RunResult;
use crate::stats::OpSummary;
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const SIZE: (u32, u32) = (900, 420);

/// Writes `<dir>/<name>-throughput.svg` and one
/// `<dir>/<name>-<op>-latency.svg` per operation that succeeded at least
/// once; returns the files written.
pub fn write(dir: &Path, name: &str, r: &RunResult) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    let ops: Vec<&OpSummary> = r.operations.iter().filter(|o| o.ok > 0).collect();
    if ops.is_empty() {
        return Ok(files);
    }
    // "-from-send" twins count the same events as their "from ack" ones.
    let rates: Vec<&OpSummary> = ops
        .iter()
        .copied()
        .filter(|o| !o.name.ends_with("-from-send"))
        .collect();
    let f = dir.join(format!("{name}-throughput.svg"));
    throughput(
        &f,
        &format!("{} — operations per second", r.workload),
        &rates,
    )?;
    files.push(f);
    for o in ops {
        let f = dir.join(format!("{name}-{}-latency.svg", o.name));
        latency(&f, &format!("{} {} — latency", r.workload, o.name), o)?;
        files.push(f);
    }
    Ok(files)
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("chart: {e:?}")
}

fn throughput(path: &Path, title: &str, ops: &[&OpSummary]) -> Result<()> {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    // The last second of a run is partial: leave it out.
    let points = |o: &OpSummary| -> Vec<(f64, f64)> {
        let n = o.timeline.len();
        o.timeline
            .iter()
            .take(if n > 1 { n - 1 } else { n })
            .filter(|p| p.ok > 0)
            .map(|p| (p.t_s as f64 + 0.5, p.ok as f64))
            .collect()
    };
    let t_max = ops
        .iter()
        .map(|o| o.timeline.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let all: Vec<f64> = ops.iter().flat_map(|o| points(o)).map(|p| p.1).collect();
    let y_max = all.iter().copied().fold(1.0f64, f64::max) * 1.2;
    let y_min = all
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .min(y_max / 2.0)
        / 1.2;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        // Log scale: operations at 50/s and events at 50,000/s on one chart.
        .build_cartesian_2d(0f64..t_max, (y_min.max(0.5)..y_max).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("ok/s (log)")
        .draw()
        .map_err(err)?;
    for (i, o) in ops.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points(o), color.stroke_width(2)))
            .map_err(err)?
            .label(o.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

fn latency(path: &Path, title: &str, o: &OpSummary) -> Result<()> {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let pts: Vec<_> = o.timeline.iter().filter(|p| p.ok > 0).collect();
    let t_max = o.timeline.len().max(1) as f64;
    let y_max = pts.iter().map(|p| p.max_ms).fold(0.01f64, f64::max) * 1.5;
    let y_min = pts
        .iter()
        .map(|p| p.p50_ms)
        .fold(f64::INFINITY, f64::min)
        .clamp(0.001, y_max / 2.0)
        / 1.5;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..t_max, (y_min..y_max).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("ms (log)")
        .draw()
        .map_err(err)?;
    type Pick = fn(&crate::stats::Point) -> f64;
    let series: [(&str, Pick, RGBColor); 4] = [
        ("p50", |p| p.p50_ms, BLUE),
        ("p90", |p| p.p90_ms, GREEN),
        ("p99", |p| p.p99_ms, RED),
        ("max", |p| p.max_ms, BLACK),
    ];
    for (label, pick, color) in series {
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.t_s as f64 + 0.5, pick(p).max(y_min))),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
