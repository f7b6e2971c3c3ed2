package observe

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Sources are the values the metrics read when scraped, rather than
// counting them on the hot path.
type Sources struct {
	// Live returns the live instances of each loaded module.
	Live func() map[string]int
	// CompileCache returns the instrumented-module cache's hits, misses
	// and errors so far.
	CompileCache func() (hit, miss, errs uint64)
	// AuditDropped returns the audit lines dropped so far.
	AuditDropped func() uint64
	// LanguageServers returns the running language servers of each
	// language and their resident memory.
	LanguageServers func() map[string]LanguageServers
	// Tiers returns the calls served by each tier of tiered loads
	// (tools.tiering), and the background compiles that swapped compiled
	// code in or failed.
	Tiers func() (interpreterCalls, compilerCalls, swapped, failed uint64)
	// InstanceMemory returns what the tool instances' linear memory is
	// charged now, the most it has been, and the budget
	// (server.max_instance_memory).
	InstanceMemory func() (used, peak, limit uint64)
	// Approvals returns the questions this process's calls wait on in the
	// console now, and how the questions asked so far ended, by outcome
	// (asked, approved, denied, expired, failed).
	Approvals func() (pending int, outcomes map[string]uint64)
}

// LanguageServers is what one language's running servers use.
type LanguageServers struct {
	Running     int
	MemoryBytes uint64
}

// Metrics are warden's Prometheus series, in a registry of its own.
type Metrics struct {
	reg       *prometheus.Registry
	calls     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	fuel      *prometheus.HistogramVec
	denials   *prometheus.CounterVec
	queueWait prometheus.Histogram
	// taskSeries are the warden_tasks_* series (tasks.go).
	taskSeries taskMetrics
}

// NewMetrics registers warden's series, reading src at scrape time.
func NewMetrics(src Sources) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_calls_total", Help: "Tool calls by tool and result kind (ok or the error kind).",
		}, []string{"tool", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "warden_call_duration_seconds", Help: "Tool call duration, from the app's view (gates included).",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"tool"}),
		fuel: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "warden_call_fuel", Help: "Fuel (instructions metered) a call consumed.",
			Buckets: prometheus.ExponentialBuckets(1000, 10, 9), // 1e3 .. 1e11
		}, []string{"tool"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_denials_total", Help: "Denied capability requests, gate refusals and prompt denials.",
		}, []string{"capability"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "warden_queue_wait_seconds", Help: "How long calls waited for a call slot (server.max_in_flight).",
			Buckets: []float64{0, .001, .01, .1, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	m.reg.MustRegister(m.calls, m.duration, m.fuel, m.denials, m.queueWait, scraped{src})
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is the registry the series are in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) call(toolName string, e CallEnd) {
	m.calls.WithLabelValues(toolName, e.Kind).Inc()
	m.duration.WithLabelValues(toolName).Observe(e.Duration.Seconds())
	m.fuel.WithLabelValues(toolName).Observe(float64(e.Fuel))
}

func (m *Metrics) denied(capability string) { m.denials.WithLabelValues(capability).Inc() }

var (
	liveDesc = prometheus.NewDesc("warden_instances_live", "Instances of each loaded module not yet closed, busy or idle.",
		[]string{"module"}, nil)
	cacheDesc = prometheus.NewDesc("warden_compile_cache_total", "Lookups in the cache of instrumented modules (tools.cache_dir).",
		[]string{"result"}, nil)
	droppedDesc = prometheus.NewDesc("warden_audit_dropped_total", "Audit lines dropped because the queue was full or the file failed.",
		nil, nil)
	lspRunningDesc = prometheus.NewDesc("warden_lsp_servers", "Running language servers of each language.",
		[]string{"language"}, nil)
	lspMemoryDesc = prometheus.NewDesc("warden_lsp_memory_bytes", "Resident memory of each language's running language servers and what they spawned (Linux).",
		[]string{"language"}, nil)
	tierCallsDesc = prometheus.NewDesc("warden_tier_calls_total", "Calls of native modules by the code that served them: wazero's interpreter (a tiered load before its compile is done) or compiled code (tools.tiering).",
		[]string{"tier"}, nil)
	instanceMemoryDesc = prometheus.NewDesc("warden_instance_memory_bytes", "Linear memory of all tool instances: used now, the peak, and the budget (server.max_instance_memory).",
		[]string{"state"}, nil)
	approvalsPendingDesc = prometheus.NewDesc("warden_approvals_pending", "Questions this process's calls wait on in the console (gate confirmations, permission prompts their client cannot show).",
		nil, nil)
	approvalsDesc = prometheus.NewDesc("warden_approvals_total", "Questions put to the console, by outcome: asked, then approved, denied, expired or failed (refused: too many waiting, backend unavailable, the call ended).",
		[]string{"outcome"}, nil)
	tierCompilesDesc = prometheus.NewDesc("warden_tier_compiles_total", "Background compiles of tiered loads: swapped in, or failed (the module keeps running on the interpreter).",
		[]string{"result"}, nil)
)

// scraped collects the series read from Sources.
type scraped struct{ src Sources }

func (s scraped) Describe(ch chan<- *prometheus.Desc) {
	ch <- liveDesc
	ch <- cacheDesc
	ch <- droppedDesc
	ch <- lspRunningDesc
	ch <- lspMemoryDesc
	ch <- tierCallsDesc
	ch <- tierCompilesDesc
	ch <- instanceMemoryDesc
	ch <- approvalsPendingDesc
	ch <- approvalsDesc
}

func (s scraped) Collect(ch chan<- prometheus.Metric) {
	if s.src.Live != nil {
		for module, n := range s.src.Live() {
			ch <- prometheus.MustNewConstMetric(liveDesc, prometheus.GaugeValue, float64(n), module)
		}
	}
	var hit, miss, errs uint64
	if s.src.CompileCache != nil {
		hit, miss, errs = s.src.CompileCache()
	}
	ch <- prometheus.MustNewConstMetric(cacheDesc, prometheus.CounterValue, float64(hit), "hit")
	ch <- prometheus.MustNewConstMetric(cacheDesc, prometheus.CounterValue, float64(miss), "miss")
	ch <- prometheus.MustNewConstMetric(cacheDesc, prometheus.CounterValue, float64(errs), "error")
	var dropped uint64
	if s.src.AuditDropped != nil {
		dropped = s.src.AuditDropped()
	}
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(dropped))
	if s.src.LanguageServers != nil {
		for lang, u := range s.src.LanguageServers() {
			ch <- prometheus.MustNewConstMetric(lspRunningDesc, prometheus.GaugeValue, float64(u.Running), lang)
			ch <- prometheus.MustNewConstMetric(lspMemoryDesc, prometheus.GaugeValue, float64(u.MemoryBytes), lang)
		}
	}
	var interpreted, compiled, swapped, failed uint64
	if s.src.Tiers != nil {
		interpreted, compiled, swapped, failed = s.src.Tiers()
	}
	ch <- prometheus.MustNewConstMetric(tierCallsDesc, prometheus.CounterValue, float64(interpreted), "interpreter")
	ch <- prometheus.MustNewConstMetric(tierCallsDesc, prometheus.CounterValue, float64(compiled), "compiler")
	ch <- prometheus.MustNewConstMetric(tierCompilesDesc, prometheus.CounterValue, float64(swapped), "swapped")
	ch <- prometheus.MustNewConstMetric(tierCompilesDesc, prometheus.CounterValue, float64(failed), "failed")
	if s.src.InstanceMemory != nil {
		used, peak, limit := s.src.InstanceMemory()
		ch <- prometheus.MustNewConstMetric(instanceMemoryDesc, prometheus.GaugeValue, float64(used), "used")
		ch <- prometheus.MustNewConstMetric(instanceMemoryDesc, prometheus.GaugeValue, float64(peak), "peak")
		ch <- prometheus.MustNewConstMetric(instanceMemoryDesc, prometheus.GaugeValue, float64(limit), "limit")
	}
	if s.src.Approvals != nil {
		pending, outcomes := s.src.Approvals()
		ch <- prometheus.MustNewConstMetric(approvalsPendingDesc, prometheus.GaugeValue, float64(pending))
		for outcome, n := range outcomes {
			ch <- prometheus.MustNewConstMetric(approvalsDesc, prometheus.CounterValue, float64(n), outcome)
		}
	}
}
