package mcpserver

import (
	"encoding/json"
	"net/http"

	"github.com/warden-run/warden/internal/termsafe"
)

// LoadError is one module that failed to load, as /healthz reports it
// (Options.LoadErrors).
type LoadError struct {
	Module string `json:"module"`
	Error  string `json:"error"`
}

// MaxHealthLoadErrors bounds the load errors /healthz lists
// (load_errors_total counts them all), and MaxHealthLoading the modules
// still loading (loading_total).
const (
	MaxHealthLoadErrors = 20
	MaxHealthLoading    = 20
)

// Health states of /healthz's "status".
const (
	// HealthLoading: the modules of the tools dir are still loading since
	// start; "loading" names those not done yet.
	HealthLoading = "loading"
	// HealthOK: the start's load ended and every module loaded.
	HealthOK = "ok"
	// HealthDegraded: the start's load ended and some modules failed
	// ("load_errors").
	HealthDegraded = "degraded"
)

// healthz answers /healthz, the liveness and readiness probe, with the
// server's state as JSON: status (HealthLoading, HealthOK or
// HealthDegraded), ready, tools, refused, loading and loading_total (while
// any module loads), load_errors and load_errors_total (when any failed),
// and Options.Stats.
//
// The status code follows Kubernetes' split between liveness and
// readiness. /healthz answers 200 while the server can serve, loading
// included: a probe that restarts the process while a slow module compiles
// would make it compile again, forever. It answers 503 only when the load
// ended and no tool is served because modules failed, so that a load
// balancer reading one URL stops routing to a server with nothing to serve.
// /healthz?ready (the readiness probe) answers 503 in both cases, loading
// too: a replica is not sent clients before its tools are in.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.syncMu.Lock()
	n := len(s.registered)
	s.syncMu.Unlock()
	var loading []string
	started := true // the start's load ended
	if s.opts.Loader != nil {
		loading = s.opts.Loader.Loading()
		started = len(loading) == 0
		if s.opts.StartupLoaded != nil {
			started = s.opts.StartupLoaded()
		}
	}
	// refused: tools not served because several modules describe the name.
	health := map[string]any{"status": HealthOK, "tools": n, "refused": nonNil(s.refused())}
	if s.opts.Stats != nil {
		for k, v := range s.opts.Stats() {
			if _, taken := health[k]; !taken {
				health[k] = v
			}
		}
	}
	if len(loading) > 0 {
		// Modules may also load after start (a file added, a retry after
		// a config change): named, but the server stays ready meanwhile.
		health["loading_total"] = len(loading)
		health["loading"] = loading[:min(len(loading), MaxHealthLoading)]
	}
	nothingServed := false
	if s.opts.LoadErrors != nil {
		if errs := s.opts.LoadErrors(); len(errs) > 0 {
			// Degraded: some modules did not load. Still 200 while any tool
			// is served (pulling a replica that serves most tools helps no
			// one); 503 when none is.
			health["status"] = HealthDegraded
			health["load_errors_total"] = len(errs)
			health["load_errors"] = errs[:min(len(errs), MaxHealthLoadErrors)]
			nothingServed = n == 0 && started
		}
	}
	if !started {
		health["status"] = HealthLoading
	}
	ready := started && !nothingServed
	health["ready"] = ready
	code := http.StatusOK
	if nothingServed || !ready && r.URL.Query().Has("ready") {
		code = http.StatusServiceUnavailable
	}
	body, err := json.Marshal(health)
	if err != nil { // cannot happen: strings, numbers and lists of them
		http.Error(w, "encoding the health: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	// Load errors may quote a module's text, and the body is read with
	// curl on a terminal: escaped as the audit log is.
	w.Write(append(termsafe.JSON(body), '\n'))
}
