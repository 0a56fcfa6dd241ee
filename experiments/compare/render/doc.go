// Package render writes a comparison (experiments/compare's Report or Matrix) in one of
// Formats: text for a terminal, Markdown (with Mermaid sequence diagrams), JSON (the
// Report or Matrix as it is) or one self-contained HTML file (inline SVG diagrams and
// charts, no script). It computes nothing about the runs: every figure, finding and
// diagram message is compare's; what it decides is only how they read — the answer that
// opens a report (answer_render.go, answer_html.go), the tables (experiments/table's,
// text tables split to a width into stacked parts that each repeat the step column), the
// probes, traffic and on-demand sections (probes.go, traffic.go, ondemand.go), the
// steady load's timeline as sparklines and as SVG (timeline.go), the sequence diagrams as
// text, Mermaid and SVG (render.go, html.go), and the scale sweep's chart
// (experiments/chart, scale.go).
//
// Report writes a two-run report, Matrix a matrix of runs. Callers: cmd/lab (lab compare
// --format) and experiments/mainjob (make lab's report.html and its Markdown and text
// twins). Its tests run in experiments/compare, beside the committed runs and goldens
// they render (main_test.go).
package render
