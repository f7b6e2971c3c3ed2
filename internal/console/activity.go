package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
	dto "github.com/prometheus/client_model/go"

	"github.com/warden-run/warden/internal/observe"
)

// Bounds of the Activity page: the audit file's tail it reads, and the
// lines it shows.
const (
	maxTailBytes   = 1 << 20
	maxActivityRow = 200
)

// activityFilter selects audit lines; empty fields match all.
type activityFilter struct {
	Tool, Principal, Decision string
}

func filterOf(r *http.Request) activityFilter {
	q := r.URL.Query()
	return activityFilter{Tool: q.Get("tool"), Principal: q.Get("principal"), Decision: q.Get("decision")}
}

func (f activityFilter) match(l *observe.Line) bool {
	return (f.Tool == "" || l.Tool == f.Tool) && (f.Principal == "" || l.Who == f.Principal) &&
		(f.Decision == "" || l.Decision == f.Decision)
}

// query is the filter as a URL query, for the live list's address.
func (f activityFilter) query() string {
	v := make([]string, 0, 3)
	add := func(k, val string) {
		if val != "" {
			v = append(v, k+"="+template.URLQueryEscaper(val))
		}
	}
	add("tool", f.Tool)
	add("principal", f.Principal)
	add("decision", f.Decision)
	if len(v) == 0 {
		return ""
	}
	return "?" + strings.Join(v, "&")
}

type activityView struct {
	Filter  activityFilter
	Query   string
	Audit   bool
	Lines   []observe.Line
	Charts  []template.HTML
	ReadErr string
}

// readAudit returns the newest lines of the audit file matching f, newest
// first. It reads the file's last maxTailBytes only: the live page shows
// what just happened; the file itself is the record. The parsed tail is
// shared: every open Activity page fetches the list on each write, and
// only the first of them after a change reads the file.
func (c *Console) readAudit(f activityFilter) ([]observe.Line, error) {
	all, err := c.auditTail.lines(c.opts.AuditPath)
	if err != nil {
		return nil, err
	}
	var out []observe.Line
	for i := len(all) - 1; i >= 0 && len(out) < maxActivityRow; i-- {
		if f.match(&all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// auditTail is the parsed tail of the audit file, kept while the file is
// the same one (not rotated) with the same size and modification time.
type auditTail struct {
	mu     sync.Mutex
	info   os.FileInfo
	parsed []observe.Line // oldest first
	// reads counts the reads of the file, for tests.
	reads int
}

func (a *auditTail) lines(path string) ([]observe.Line, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	file, err := os.Open(path)
	if os.IsNotExist(err) {
		a.info, a.parsed = nil, nil
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if a.info != nil && os.SameFile(a.info, st) && a.info.Size() == st.Size() && a.info.ModTime().Equal(st.ModTime()) {
		return a.parsed, nil
	}
	a.reads++
	off := max(st.Size()-maxTailBytes, 0)
	data, err := io.ReadAll(io.NewSectionReader(file, off, st.Size()-off))
	if err != nil {
		return nil, err
	}
	if off > 0 {
		// The first line is cut: skip to the next one.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	var parsed []observe.Line
	for _, raw := range bytes.Split(data, []byte{'\n'}) {
		var l observe.Line
		if len(raw) == 0 || json.Unmarshal(raw, &l) != nil {
			continue
		}
		parsed = append(parsed, l)
	}
	// Callers only read the slice: it is shared until the next change.
	a.info, a.parsed = st, parsed
	return parsed, nil
}

func (c *Console) activityView(r *http.Request) activityView {
	f := filterOf(r)
	v := activityView{Filter: f, Query: f.query(), Audit: c.opts.AuditPath != ""}
	if v.Audit {
		lines, err := c.readAudit(f)
		if err != nil {
			v.ReadErr = err.Error()
		}
		v.Lines = lines
	}
	return v
}

func (c *Console) activityPage(w http.ResponseWriter, r *http.Request, s *session) {
	v := c.activityView(r)
	v.Charts = c.charts()
	c.render(w, http.StatusOK, "activity", s, v)
}

func (c *Console) activityList(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderBlock(w, http.StatusOK, "activity", "list", s, c.activityView(r), "", "")
}

// activityEvents sends a change event whenever the audit file is written
// (the audit writer flushes in batches, so events come at most as often).
func (c *Console) activityEvents(w http.ResponseWriter, r *http.Request, s *session) {
	if c.opts.AuditPath == "" {
		http.NotFound(w, r)
		return
	}
	changes, cancel, err := c.audit.subscribe(c.opts.AuditPath)
	if err != nil {
		http.Error(w, "cannot watch the audit log: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer cancel()
	c.stream(w, r, s, changes)
}

// auditWatch is one watch of the audit log's directory shared by every
// open Activity page: a watch per page would spend an inotify instance
// each, of which a user has few, and the server's own config and tools
// watches need theirs.
type auditWatch struct {
	mu      sync.Mutex
	watcher *fsnotify.Watcher
	subs    map[int]chan struct{}
	next    int
}

// subscribe returns a channel that receives a value when the audit file
// at path changes, starting the watch on first use.
func (a *auditWatch) subscribe(path string) (<-chan struct{}, func(), error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.watcher == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, nil, err
		}
		// The directory, not the file: rotation replaces the file.
		if err := w.Add(filepath.Dir(path)); err != nil {
			w.Close()
			return nil, nil, err
		}
		a.watcher, a.subs = w, map[int]chan struct{}{}
		go a.run(w, filepath.Clean(path))
	}
	ch := make(chan struct{}, 1)
	id := a.next
	a.next++
	a.subs[id] = ch
	return ch, func() {
		a.mu.Lock()
		delete(a.subs, id)
		a.mu.Unlock()
	}, nil
}

func (a *auditWatch) run(w *fsnotify.Watcher, name string) {
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) != name {
				continue
			}
			a.mu.Lock()
			for _, ch := range a.subs {
				select {
				case ch <- struct{}{}:
				default: // a change is already pending for this page
				}
			}
			a.mu.Unlock()
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
		}
	}
}

// close stops the watch.
func (a *auditWatch) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.watcher != nil {
		a.watcher.Close()
		a.watcher = nil
	}
}

// charts renders warden's own metrics as bar charts, one series per tool
// (inline SVG, so the CSP needs nothing more).
func (c *Console) charts() []template.HTML {
	if c.opts.Metrics == nil {
		return nil
	}
	families, err := c.opts.Metrics.Gather()
	if err != nil {
		return []template.HTML{template.HTML("<p class=\"error\">metrics: " + template.HTMLEscapeString(err.Error()) + "</p>")}
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	sumBy := func(family, label string, keep func(*dto.Metric) bool, value func(*dto.Metric) float64) map[string]float64 {
		out := map[string]float64{}
		f := byName[family]
		if f == nil {
			return out
		}
		for _, m := range f.GetMetric() {
			if keep != nil && !keep(m) {
				continue
			}
			out[labelOf(m, label)] += value(m)
		}
		return out
	}
	counter := func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }
	gauge := func(m *dto.Metric) float64 { return m.GetGauge().GetValue() }
	count := func(m *dto.Metric) float64 { return float64(m.GetHistogram().GetSampleCount()) }
	sum := func(m *dto.Metric) float64 { return m.GetHistogram().GetSampleSum() }
	mean := func(family string, scale float64) map[string]float64 {
		n, s := sumBy(family, "tool", nil, count), sumBy(family, "tool", nil, sum)
		out := map[string]float64{}
		for k, c := range n {
			if c > 0 {
				out[k] = s[k] / c * scale
			}
		}
		return out
	}
	return []template.HTML{
		barChart("chart-calls", "Calls", "", sumBy("warden_calls_total", "tool", nil, counter), false),
		barChart("chart-errors", "Errors (calls not ok)", "", sumBy("warden_calls_total", "tool", func(m *dto.Metric) bool { return labelOf(m, "kind") != "ok" }, counter), true),
		barChart("chart-latency", "Mean latency", "ms", mean("warden_call_duration_seconds", 1000), false),
		barChart("chart-fuel", "Mean fuel per call", "", mean("warden_call_fuel", 1), false),
		barChart("chart-instances", "Live instances per module", "", sumBy("warden_instances_live", "module", nil, gauge), false),
		barChart("chart-memory", "Instance memory", "MiB", scale(sumBy("warden_instance_memory_bytes", "state", nil, gauge), 1.0/(1<<20)), false),
	}
}

func scale(values map[string]float64, by float64) map[string]float64 {
	for k, v := range values {
		values[k] = v * by
	}
	return values
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// barChart draws one horizontal bar per key, largest first (at most 12).
func barChart(id, title, unit string, values map[string]float64, bad bool) template.HTML {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if values[keys[i]] != values[keys[j]] {
			return values[keys[i]] > values[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > 12 {
		keys = keys[:12]
	}
	var top float64
	for _, k := range keys {
		top = math.Max(top, values[k])
	}
	const width, row, label = 320, 18, 110
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="chart" id="%s"><figcaption>%s</figcaption>`, id, template.HTMLEscapeString(title))
	if len(keys) == 0 {
		b.WriteString(`<p class="empty">No data yet.</p></figure>`)
		return template.HTML(b.String())
	}
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" role="img" aria-label="%s">`, width, row*len(keys)+4, template.HTMLEscapeString(title))
	class := "bar"
	if bad {
		class = "bar bad"
	}
	for i, k := range keys {
		w := 0.0
		if top > 0 {
			w = values[k] / top * float64(width-label-80)
		}
		y := i*row + 2
		fmt.Fprintf(&b, `<text x="0" y="%d">%s</text><rect class="%s" x="%d" y="%d" width="%.1f" height="%d"></rect><text x="%.1f" y="%d">%s</text>`,
			y+12, template.HTMLEscapeString(clipLabel(k)), class, label, y+2, w, row-6, float64(label)+w+4, y+12,
			template.HTMLEscapeString(formatValue(values[k], unit)))
	}
	b.WriteString(`</svg></figure>`)
	return template.HTML(b.String())
}

func clipLabel(s string) string {
	if len(s) > 16 {
		return s[:15] + "…"
	}
	return s
}

func formatValue(v float64, unit string) string {
	s := fmt.Sprintf("%.4g", v)
	if unit != "" {
		s += " " + unit
	}
	return s
}
