//! From runs to medians: one [`Row`] per variant and size, one [`Extra`] per metric.

use std::collections::BTreeMap;

use super::{Extra, Row, Run};

/// The median, the mean of the middle two for an even count; `None` for no values.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[mid]),
        _ => Some((sorted[mid - 1] + sorted[mid]) / 2.0),
    }
}

/// The medians of a series of runs, each phase over the runs that report it.
pub fn summarise(label: &str, size: u32, runs: &[Run]) -> Option<Row> {
    let mut phases: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in runs {
        for (phase, &ms) in &run.report.phases_ms {
            phases.entry(phase.clone()).or_default().push(ms);
        }
    }
    let walls: Vec<f64> = runs.iter().map(|run| run.wall_ms).collect();
    Some(Row {
        lab: label.to_string(),
        size,
        device: runs.first()?.report.device.clone(),
        runs: runs.len(),
        phases: phases
            .into_iter()
            .filter_map(|(phase, ms)| Some((phase, median(&ms)?)))
            .collect(),
        wall_ms: median(&walls)?,
    })
}

/// The medians of every numeric metric of a lab run with its defaults, with its phases and
/// wall time.
pub fn summarise_extras(label: &str, runs: &[Run]) -> Vec<Extra> {
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in runs {
        let mut leaves = Vec::new();
        for (key, value) in &run.report.metrics {
            numeric_leaves(key, value, &mut leaves);
        }
        for (phase, &ms) in &run.report.phases_ms {
            leaves.push((format!("{phase}_ms"), ms));
        }
        leaves.push(("wall_ms".to_string(), run.wall_ms));
        for (metric, value) in leaves {
            values.entry(metric).or_default().push(value);
        }
    }
    values
        .into_iter()
        .filter_map(|(metric, series)| {
            Some(Extra {
                lab: label.to_string(),
                metric,
                median: median(&series)?,
            })
        })
        .collect()
}

/// The numbers inside a metric, named by their path (`variants.plain.gbps`): lab06 may nest
/// its per-variant figures. Text and flags have no median and are left out.
pub fn numeric_leaves(name: &str, value: &serde_json::Value, out: &mut Vec<(String, f64)>) {
    match value {
        serde_json::Value::Number(n) => out.extend(n.as_f64().map(|v| (name.to_string(), v))),
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                numeric_leaves(&format!("{name}.{key}"), inner, out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                numeric_leaves(&format!("{name}.{i}"), inner, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn metrics_flatten_to_named_numbers() {
        let value =
            serde_json::json!({"plain": {"gbps": 2.5, "best": "256x1024"}, "sweep": [1, 2]});
        let mut leaves = Vec::new();
        numeric_leaves("gpu", &value, &mut leaves);
        assert_eq!(
            leaves,
            [
                ("gpu.plain.gbps".to_string(), 2.5),
                ("gpu.sweep.0".to_string(), 1.0),
                ("gpu.sweep.1".to_string(), 2.0),
            ]
        );
    }
}
