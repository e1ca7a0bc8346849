//! Self-contained HTML reports (`--html FILE` of `diagnose`, `plan` and `verify`): one file of
//! inline CSS and SVG, no script, nothing fetched (its Content-Security-Policy forbids any
//! request), to attach to a ticket. Every text that comes from input (application and stage
//! names, SQL, paths, key values) goes through `esc`.
//!
//! Charts: `bars` (one bar per shuffle partition or task, marked bars red with their label),
//! `histogram` (task durations) and `timeline` (stages over the application's clock).

use crate::format::{fmt_count, fmt_ms};

/// `s` with HTML's special characters escaped (text and attribute values alike).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1000px;color:#222}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}\
td:first-child,th:first-child{text-align:left}pre{background:#f6f6f6;padding:8px;overflow-x:auto;white-space:pre-wrap}\
.bar{fill:#4a7fb5}.hot{fill:#d1495b}.muted{fill:#999}.axis{stroke:#888;stroke-width:1}.median{stroke:#2a9d8f;stroke-dasharray:4 3}\
svg text{font:11px system-ui,sans-serif;fill:#333}.finding{border-left:4px solid #d1495b;padding:4px 10px;margin:8px 0}\
.ok{border-left:4px solid #2a9d8f;padding:4px 10px;margin:8px 0}";

/// A page being written.
pub struct Page {
    body: String,
    title: String,
}

impl Page {
    pub fn new(title: &str) -> Page {
        Page { body: format!("<h1>{}</h1>\n", esc(title)), title: title.to_string() }
    }

    pub fn heading(&mut self, h: &str) {
        self.body.push_str(&format!("<h2>{}</h2>\n", esc(h)));
    }

    pub fn para(&mut self, text: &str) {
        self.body.push_str(&format!("<p>{}</p>\n", esc(text)));
    }

    /// A box: `flagged` red-edged (a finding), else green-edged (checked, not flagged).
    pub fn note(&mut self, flagged: bool, title: &str, lines: &[String]) {
        let class = if flagged { "finding" } else { "ok" };
        let items: String =
            lines.iter().filter(|l| !l.is_empty()).map(|l| format!("<br>{}", esc(l))).collect();
        self.body.push_str(&format!("<div class=\"{class}\"><b>{}</b>{items}</div>\n", esc(title)));
    }

    pub fn pre(&mut self, text: &str) {
        self.body.push_str(&format!("<pre>{}</pre>\n", esc(text)));
    }

    pub fn table(&mut self, header: &[&str], rows: &[Vec<String>]) {
        let th: String = header.iter().map(|h| format!("<th>{}</th>", esc(h))).collect();
        let trs: String = rows
            .iter()
            .map(|r| {
                format!(
                    "<tr>{}</tr>",
                    r.iter().map(|c| format!("<td>{}</td>", esc(c))).collect::<String>()
                )
            })
            .collect();
        self.body.push_str(&format!("<table><tr>{th}</tr>{trs}</table>\n"));
    }

    /// A table the text output prints, as an HTML table (its header and cells, escaped).
    pub fn comfy(&mut self, t: &comfy_table::Table) {
        let cells =
            |r: &comfy_table::Row| r.cell_iter().map(|c| c.content()).collect::<Vec<String>>();
        let header = t.header().map(cells).unwrap_or_default();
        let rows: Vec<Vec<String>> = t.row_iter().map(cells).collect();
        self.table(&header.iter().map(String::as_str).collect::<Vec<_>>(), &rows);
    }

    pub fn svg(&mut self, svg: String) {
        self.body.push_str(&svg);
        self.body.push('\n');
    }

    pub fn finish(self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
<title>{}</title><style>{STYLE}</style></head>\n<body>\n{}<p style=\"color:#888\">written by skewjoin {}</p>\n</body></html>\n",
            esc(&self.title),
            self.body,
            env!("CARGO_PKG_VERSION")
        )
    }
}

const W: f64 = 960.0;
const PLOT_H: f64 = 180.0;
const LEFT: f64 = 100.0;
/// At most this many bars: more values are drawn as the largest of each run of them.
const MAX_BARS: usize = 1000;

/// A bar chart of `values` (rows or records per partition or task, in order).
pub struct Bars<'a> {
    pub title: &'a str,
    /// What one bar is ("partition", "task").
    pub item: &'a str,
    /// What a value counts ("rows", "records").
    pub unit: &'a str,
    pub values: &'a [u64],
    /// Bars to mark, each with its label (the hot key it holds).
    pub marks: Vec<(usize, String)>,
    /// The scale's top, to draw two charts on one scale (else the largest value).
    pub top: Option<u64>,
}

impl Bars<'_> {
    pub fn svg(&self) -> String {
        let n = self.values.len();
        let per = n.div_ceil(MAX_BARS).max(1);
        let groups: Vec<u64> =
            self.values.chunks(per).map(|c| c.iter().copied().max().unwrap_or(0)).collect();
        let top =
            self.top.unwrap_or(0).max(groups.iter().copied().max().unwrap_or(0)).max(1) as f64;
        let bw = (W - LEFT - 10.0) / groups.len().max(1) as f64;
        let y = |v: u64| 20.0 + PLOT_H - PLOT_H * v as f64 / top;
        let mut s = format!(
            "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{}\" role=\"img\"><title>{}</title>",
            PLOT_H + 60.0,
            esc(self.title)
        );
        s.push_str(&format!("<text x=\"{LEFT}\" y=\"12\">{}</text>", esc(self.title)));
        for (g, v) in groups.iter().enumerate() {
            let marked = self.marks.iter().any(|(i, _)| i / per == g);
            let what = if per == 1 {
                format!("{} {g}", self.item)
            } else {
                format!("{}s {}-{} (the largest)", self.item, g * per, ((g + 1) * per).min(n) - 1)
            };
            s.push_str(&format!(
                "<rect class=\"{}\" x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\"><title>{}: {} {}</title></rect>",
                if marked { "bar hot" } else { "bar" },
                LEFT + g as f64 * bw,
                y(*v),
                (bw - if bw > 3.0 { 1.0 } else { 0.0 }).max(0.5),
                (20.0 + PLOT_H - y(*v)).max(if *v > 0 { 1.0 } else { 0.0 }),
                esc(&what),
                fmt_count(*v),
                esc(self.unit)
            ));
        }
        let mut sorted = self.values.to_vec();
        sorted.sort_unstable();
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
        s.push_str(&format!(
            "<line class=\"median\" x1=\"{LEFT}\" x2=\"{W}\" y1=\"{0:.2}\" y2=\"{0:.2}\"/>",
            y(median)
        ));
        s.push_str(&axis(top as u64, self.unit, n, self.item));
        for (k, (i, label)) in self.marks.iter().take(4).enumerate() {
            let x = LEFT + (i / per) as f64 * bw;
            let anchor = if x > W * 0.6 { "end" } else { "start" };
            s.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" fill=\"#d1495b\">{}</text>",
                x + bw / 2.0,
                32.0 + 13.0 * k as f64,
                esc(&format!(
                    "{} {i}: {} ({} {})",
                    self.item,
                    label,
                    fmt_count(self.values.get(*i).copied().unwrap_or(0)),
                    self.unit
                ))
            ));
        }
        s.push_str(&format!(
            "<text x=\"{W}\" y=\"{}\" text-anchor=\"end\">median {} {}; largest {}</text></svg>",
            PLOT_H + 55.0,
            fmt_count(median),
            esc(self.unit),
            fmt_count(sorted.last().copied().unwrap_or(0))
        ));
        s
    }
}

/// The value axis (0 and the top) and the item axis (first and last).
fn axis(top: u64, unit: &str, n: usize, item: &str) -> String {
    format!(
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"20\" y2=\"{b}\"/><line class=\"axis\" x1=\"{LEFT}\" x2=\"{W}\" y1=\"{b}\" y2=\"{b}\"/>\
<text x=\"{l}\" y=\"26\" text-anchor=\"end\">{}</text><text x=\"{l}\" y=\"{b}\" text-anchor=\"end\">0</text>\
<text x=\"{l}\" y=\"40\" text-anchor=\"end\">{}</text><text x=\"{LEFT}\" y=\"{}\">{} 0</text><text x=\"{W}\" y=\"{}\" text-anchor=\"end\">{} {}</text>",
        fmt_count(top),
        esc(unit),
        PLOT_H + 36.0,
        esc(item),
        PLOT_H + 36.0,
        esc(item),
        n.saturating_sub(1),
        l = LEFT - 4.0,
        b = 20.0 + PLOT_H,
    )
}

/// A histogram of task durations (ms) in 30 equal bins, like the Spark UI's summary.
pub fn histogram(title: &str, durations_ms: &[i64]) -> String {
    const BINS: usize = 30;
    let max = durations_ms.iter().copied().max().unwrap_or(0).max(1);
    let width = (max as f64 / BINS as f64).max(1.0);
    let mut counts = vec![0u64; BINS];
    for &d in durations_ms {
        counts[((d.max(0) as f64 / width) as usize).min(BINS - 1)] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let bw = (W - LEFT - 10.0) / BINS as f64;
    let mut s = format!("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{}\" role=\"img\"><title>{}</title><text x=\"{LEFT}\" y=\"12\">{}</text>", PLOT_H + 60.0, esc(title), esc(title));
    for (b, c) in counts.iter().enumerate() {
        let h = PLOT_H * *c as f64 / top;
        let (lo, hi) = ((b as f64 * width) as i64, ((b + 1) as f64 * width) as i64);
        s.push_str(&format!(
            "<rect class=\"{}\" x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\"><title>{} to {}: {} tasks</title></rect>",
            if b == BINS - 1 && *c > 0 { "bar hot" } else { "bar" },
            LEFT + b as f64 * bw,
            20.0 + PLOT_H - h,
            bw - 1.0,
            if *c > 0 { h.max(1.0) } else { 0.0 },
            fmt_ms(lo),
            fmt_ms(hi),
            fmt_count(*c)
        ));
    }
    if let Some(last) = counts.iter().rposition(|&c| c > 0).filter(|&b| b > 0 && counts[b - 1] == 0)
    {
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#d1495b\">{} task(s) of {} or more</text>",
            LEFT + (last + 1) as f64 * bw,
            14.0 + PLOT_H,
            fmt_count(counts[last]),
            fmt_ms((last as f64 * width) as i64)
        ));
    }
    s.push_str(&format!(
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{W}\" y1=\"{b}\" y2=\"{b}\"/><text x=\"{LEFT}\" y=\"{t}\">0</text><text x=\"{W}\" y=\"{t}\" text-anchor=\"end\">{} (task duration)</text>\
<text x=\"{l}\" y=\"26\" text-anchor=\"end\">{} tasks</text></svg>",
        fmt_ms(max),
        fmt_count(top as u64),
        b = 20.0 + PLOT_H,
        t = PLOT_H + 36.0,
        l = LEFT - 4.0
    ));
    s
}

/// One stage on the timeline.
pub struct Span {
    pub label: String,
    pub start_ms: i64,
    pub end_ms: i64,
    pub marked: bool,
}

/// Stages as horizontal bars over the application's clock (`0..total_ms`).
pub fn timeline(title: &str, spans: &[Span], total_ms: i64) -> String {
    let row = 16.0;
    let h = 40.0 + row * spans.len() as f64;
    let x = |t: i64| {
        LEFT + (W - LEFT - 10.0) * t.clamp(0, total_ms.max(1)) as f64 / total_ms.max(1) as f64
    };
    let mut s = format!("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{h}\" role=\"img\"><title>{}</title><text x=\"{LEFT}\" y=\"12\">{}</text>", esc(title), esc(title));
    for (i, sp) in spans.iter().enumerate() {
        let y = 20.0 + row * i as f64;
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text><rect class=\"{}\" x=\"{:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{:.1}\"><title>{}: {}</title></rect>",
            LEFT - 4.0,
            y + 11.0,
            esc(sp.label.split(':').next().unwrap_or("")),
            if sp.marked { "bar hot" } else { "bar" },
            x(sp.start_ms),
            (x(sp.end_ms) - x(sp.start_ms)).max(1.0),
            row - 3.0,
            esc(&sp.label),
            fmt_ms(sp.end_ms - sp.start_ms)
        ));
    }
    s.push_str(&format!(
        "<text x=\"{LEFT}\" y=\"{t}\">0</text><text x=\"{W}\" y=\"{t}\" text-anchor=\"end\">{} (wall clock)</text></svg>",
        fmt_ms(total_ms),
        t = h - 4.0
    ));
    s
}

/// `values` as one line of block characters, at most `width` of them (each the largest of
/// its run), for a terminal.
pub fn sparkline(values: &[u64], width: usize) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let per = values.len().div_ceil(width.max(1)).max(1);
    let groups: Vec<u64> =
        values.chunks(per).map(|c| c.iter().copied().max().unwrap_or(0)).collect();
    let top = groups.iter().copied().max().unwrap_or(0).max(1) as f64;
    groups.iter().map(|&v| BLOCKS[((v as f64 / top) * 7.0).round() as usize]).collect()
}

/// Write the page to `path`: one line on failure.
pub fn write(path: &std::path::Path, page: Page) -> crate::Result<()> {
    std::fs::write(path, page.finish()).map_err(|e| {
        crate::Error::Usage(format!("{}: cannot write the HTML report: {e}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_is_escaped_everywhere() {
        let mut p = Page::new("<script>alert(1)</script>");
        p.para("a & b");
        p.table(&["k"], &[vec!["\"'><img src=x>".into()]]);
        p.svg(
            Bars {
                title: "</svg><script>",
                item: "partition",
                unit: "rows",
                values: &[1, 5, 2],
                marks: vec![(1, "<b>NULL</b>".into())],
                top: None,
            }
            .svg(),
        );
        let html = p.finish();
        assert!(
            !html.contains("<script") && !html.contains("<img") && !html.contains("<b>NULL"),
            "{html}"
        );
        assert!(html.contains("&lt;b&gt;NULL&lt;/b&gt;") && html.contains("a &amp; b"));
        assert_eq!(html.matches("<rect class=\"bar").count(), 3);
        assert_eq!(html.matches("class=\"bar hot\"").count(), 1);
    }

    #[test]
    fn many_values_drawn_as_the_largest_of_each_run() {
        let v: Vec<u64> = (0..5000).map(|i| if i == 4321 { 900 } else { 1 }).collect();
        let svg = Bars {
            title: "t",
            item: "task",
            unit: "records",
            values: &v,
            marks: vec![(4321, "hot".into())],
            top: None,
        }
        .svg();
        assert_eq!(svg.matches("<rect").count(), 1000);
        assert!(svg.contains("tasks 4320-4324 (the largest): 900 records"));
        assert_eq!(sparkline(&[0, 0, 8, 0], 4), "▁▁█▁");
        assert_eq!(sparkline(&v, 50).chars().count(), 50);
    }
}
