package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// point is one x value and its figure (median and spread).
type point struct {
	x float64
	y stat
}

// series is one line of a plot.
type series struct {
	name   string
	points []point
}

var colors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}

// writePlot writes a line plot, both axes logarithmic, with the spread of
// every point as a vertical bar, as hand-made SVG.
func writePlot(dir, file, title, xlabel, ylabel string, ss []series) error {
	const w, h, left, right, top, bottom = 640.0, 400.0, 70.0, 110.0, 40.0, 50.0
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.points {
			if !p.y.ok() || p.x <= 0 || p.y.med <= 0 {
				continue
			}
			xmin, xmax = math.Min(xmin, p.x), math.Max(xmax, p.x)
			lo, hi := p.y.med, p.y.med
			if !math.IsNaN(p.y.lo) && p.y.lo > 0 {
				lo, hi = math.Min(lo, p.y.lo), math.Max(hi, p.y.hi)
			}
			ymin, ymax = math.Min(ymin, lo), math.Max(ymax, hi)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" font-family=\"sans-serif\" font-size=\"12\">\n", w, h, w, h)
	fmt.Fprintf(&b, "<rect width=\"%g\" height=\"%g\" fill=\"white\"/>\n", w, h)
	fmt.Fprintf(&b, "<text x=\"%g\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">%s</text>\n", (left+w-right)/2, html.EscapeString(title))
	if math.IsInf(xmin, 1) {
		fmt.Fprintf(&b, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">no data</text>\n</svg>\n", w/2, h/2)
		return os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644)
	}
	// Pad the ranges to whole decades on y, a little on x.
	ly0, ly1 := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
	if ly1 <= ly0 {
		ly1 = ly0 + 1
	}
	lx0, lx1 := math.Log2(xmin), math.Log2(xmax)
	if lx1 <= lx0 {
		lx0, lx1 = lx0-1, lx1+1
	}
	pad := (lx1 - lx0) * 0.05
	lx0, lx1 = lx0-pad, lx1+pad
	px := func(x float64) float64 { return left + (math.Log2(x)-lx0)/(lx1-lx0)*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - (math.Log10(y)-ly0)/(ly1-ly0)*(h-top-bottom) }
	fmt.Fprintf(&b, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#444\"/>\n", left, top, w-left-right, h-top-bottom)
	for d := ly0; d <= ly1; d++ {
		for _, m := range []float64{1, 2, 5} {
			y := m * math.Pow(10, d)
			if math.Log10(y) > ly1+1e-9 {
				break
			}
			yy := py(y)
			fmt.Fprintf(&b, "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, yy, w-right, yy)
			fmt.Fprintf(&b, "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left-5, yy+4, num(y))
		}
	}
	ticks := map[float64]bool{}
	for _, s := range ss {
		for _, p := range s.points {
			if p.x > 0 && !ticks[p.x] {
				ticks[p.x] = true
				xx := px(p.x)
				fmt.Fprintf(&b, "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#ddd\"/>\n", xx, top, xx, h-bottom)
				fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%s</text>\n", xx, h-bottom+16, html.EscapeString(shortSize(p.x, xlabel)))
			}
		}
	}
	fmt.Fprintf(&b, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n", (left+w-right)/2, h-12, html.EscapeString(xlabel))
	fmt.Fprintf(&b, "<text transform=\"translate(16 %g) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", (top+h-bottom)/2, html.EscapeString(ylabel+" (log scale)"))
	for i, s := range ss {
		col := colors[i%len(colors)]
		var path []string
		for _, p := range s.points {
			if !p.y.ok() || p.x <= 0 || p.y.med <= 0 {
				continue
			}
			xx, yy := px(p.x), py(p.y.med)
			path = append(path, fmt.Sprintf("%.1f,%.1f", xx, yy))
			if !math.IsNaN(p.y.lo) && p.y.lo > 0 && p.y.hi > p.y.lo {
				fmt.Fprintf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" opacity=\"0.5\"/>\n", xx, py(p.y.lo), xx, py(p.y.hi), col)
			}
			fmt.Fprintf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s %s: %s</title></circle>\n", xx, yy, col, html.EscapeString(s.name), num(p.x), num(p.y.med))
		}
		if len(path) > 1 {
			fmt.Fprintf(&b, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n", strings.Join(path, " "), col)
		}
		ly := top + 10 + float64(i)*20
		fmt.Fprintf(&b, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" stroke-width=\"2\"/>\n", w-right+10, ly, w-right+30, ly, col)
		fmt.Fprintf(&b, "<text x=\"%g\" y=\"%g\">%s</text>\n", w-right+35, ly+4, html.EscapeString(s.name))
	}
	fmt.Fprintf(&b, "<text x=\"%g\" y=\"%g\" font-size=\"10\" fill=\"#666\">bars: min-max</text>\n", w-right+10, top+10+float64(len(ss))*20)
	b.WriteString("</svg>\n")
	return os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644)
}

// shortSize labels an x tick: sizes in B, KiB, MiB; counts as they are.
func shortSize(x float64, label string) string {
	if !strings.Contains(label, "bytes") {
		return num(x)
	}
	return strings.ReplaceAll(sizeName(int(x)), " ", "")
}

func num(v float64) string {
	if v >= 100 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
