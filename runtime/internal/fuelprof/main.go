// Command fuelprof prints where a warm call of a warden module spends its
// fuel, per guest function. Fuel is one unit per wasm instruction and
// deterministic, so the profile is exact and repeatable, unlike a timing
// profile on a shared machine (docs/performance.md, "Where the rest of the
// gap goes").
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o /tmp/echo.wasm ./tools-wasm/echo
//	go run ./runtime/internal/fuelprof [-warm N] [-request JSON] [-print] /tmp/echo.wasm
//	go run ./runtime/internal/fuelprof -series 200 /tmp/echo.wasm
//	go run ./runtime/internal/fuelprof -export regexp -arg 2 -warm 2 /tmp/goguest.wasm
//
// It meters the module with the runtime's own instrumentation (fuel only),
// makes N warm warden_call calls, then profiles one more with a wazero
// function listener that reads the fuel global at each function's entry
// and exit. That reading is exact: the instrumentation stores the running
// fuel to the global before every call and return. Each line is exclusive
// units, calls, inclusive units and the function's name, heaviest first.
//
// It lives under runtime/internal because it imports the instrument
// package; it is a developer tool, not part of warden.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"sort"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/warden-run/warden/runtime/internal/instrument"
)

func main() {
	warm := flag.Int("warm", 20, "calls to make before the profiled one")
	request := flag.String("request", `{"tool":"echo","arguments":{"text":"hello"}}`, "the warden_call request")
	printResponse := flag.Bool("print", false, "print the profiled call's response")
	series := flag.Int("series", 0, "instead of a profile, print the fuel of this many calls after the warm ones")
	export := flag.String("export", "", "call this export with -arg instead of warden_call (a benchmark guest)")
	arg := flag.Uint64("arg", 0, "the argument of -export")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: fuelprof [flags] module.wasm")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdout, flag.Arg(0), []byte(*request), *export, *arg, *warm, *series, *printResponse); err != nil {
		log.Fatal(err)
	}
}

func run(out io.Writer, path string, request []byte, export string, arg uint64, warm, series int, printResponse bool) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	metered, err := instrument.Instrument(raw, instrument.Config{Fuel: true, InitialFuel: 1 << 40})
	if err != nil {
		return fmt.Errorf("instrument %s: %w", path, err)
	}
	p := &profiler{calls: map[string]int{}, exclusive: map[string]int64{}, inclusive: map[string]int64{}}
	ctx := experimental.WithFunctionListenerFactory(context.Background(), p)
	// The interpreter: the compiler does not call function listeners.
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	m, err := r.InstantiateWithConfig(ctx, metered.Wasm, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		return fmt.Errorf("instantiate %s: %w", path, err)
	}
	p.fuel = m.ExportedGlobal(metered.FuelGlobal)
	call := func() ([]byte, error) {
		if export != "" {
			fn := m.ExportedFunction(export)
			if fn == nil {
				return nil, fmt.Errorf("%s exports no function %q", path, export)
			}
			res, err := fn.Call(ctx, arg)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", export, err)
			}
			return fmt.Appendf(nil, "%v", res), nil
		}
		at, err := m.ExportedFunction("warden_alloc").Call(ctx, uint64(len(request)))
		if err != nil {
			return nil, fmt.Errorf("warden_alloc: %w", err)
		}
		m.Memory().Write(uint32(at[0]), request)
		res, err := m.ExportedFunction("warden_call").Call(ctx, at[0]<<32|uint64(len(request)))
		if err != nil {
			return nil, fmt.Errorf("warden_call: %w", err)
		}
		resp, _ := m.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
		return resp, nil
	}
	for range warm {
		if _, err := call(); err != nil {
			return err
		}
	}
	if series > 0 {
		// The spread shows occasional work: a span refill or a collection
		// costs thousands of units on the call it falls on.
		var total uint64
		for range series {
			before := p.fuel.Get()
			if _, err := call(); err != nil {
				return err
			}
			used := before - p.fuel.Get()
			total += used
			fmt.Fprintf(out, "%d ", used)
		}
		fmt.Fprintf(out, "\nmean %.0f over %d calls\n", float64(total)/float64(series), series)
		return nil
	}
	p.on = true
	before := p.fuel.Get()
	resp, err := call()
	if err != nil {
		return err
	}
	p.on = false
	if printResponse {
		fmt.Fprintf(out, "response %s\n", resp)
	}
	fmt.Fprintf(out, "fuel total %d\n", before-p.fuel.Get())
	type row struct {
		name      string
		exclusive int64
	}
	var rows []row
	for name, units := range p.exclusive {
		rows = append(rows, row{name, units})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].exclusive != rows[j].exclusive {
			return rows[i].exclusive > rows[j].exclusive
		}
		return rows[i].name < rows[j].name
	})
	fmt.Fprintln(out, "exclusive calls inclusive function")
	for _, r := range rows {
		fmt.Fprintln(out, r.exclusive, p.calls[r.name], p.inclusive[r.name], r.name)
	}
	return nil
}

// profiler attributes fuel to guest functions while on.
type profiler struct {
	on        bool
	fuel      api.Global
	calls     map[string]int
	exclusive map[string]int64
	inclusive map[string]int64
	stack     []frame
}

type frame struct {
	name     string
	start    uint64
	children int64
}

func (p *profiler) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	return listener{p, def.DebugName()}
}

type listener struct {
	p    *profiler
	name string
}

func (l listener) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
	if l.p.on {
		l.p.calls[l.name]++
		l.p.stack = append(l.p.stack, frame{name: l.name, start: l.p.fuel.Get()})
	}
}

func (l listener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {
	p := l.p
	if !p.on || len(p.stack) == 0 {
		return
	}
	f := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	used := int64(f.start - p.fuel.Get())
	p.exclusive[f.name] += used - f.children
	p.inclusive[f.name] += used
	if len(p.stack) > 0 {
		p.stack[len(p.stack)-1].children += used
	}
}

func (listener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}
