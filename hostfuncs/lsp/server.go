package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// server is one running language-server process and its connection.
type server struct {
	target Target
	lang   Language
	cfg    *Config
	log    *slog.Logger

	cmd      *exec.Cmd
	pid      int
	group    *procGroup // the server and what it spawns (process_*.go)
	started  time.Time
	pipes    *pipeConn
	conn     jsonrpc2.Conn
	rpc      protocol.Server
	encoding protocol.PositionEncodingKind
	rootFS   *os.Root
	// roots are the spellings of the root a server may use in its URIs:
	// as configured and with symlinks resolved.
	roots []string

	stderr   *tailWriter
	exited   chan struct{} // closed once the process is reaped
	exitErr  error         // why it exited; set before exited is closed
	stopping atomic.Bool   // an exit from now on is not a crash

	docMu sync.Mutex
	docs  map[string]*document // by relative path

	diagMu     sync.Mutex
	diags      map[string]published // by relative path
	diagSeq    uint64               // publishes so far
	diagSignal chan struct{}        // closed and replaced on every publish

	// warmSem is warmUp's lock, a channel so that a query waiting for
	// another's warm-up gives up at its own deadline.
	warmSem chan struct{}
	warm    bool // warmUp is done; guarded by warmSem

	progMu     sync.Mutex
	progress   map[string]bool // work-done progress begun and not ended, by token
	endedFirst map[string]bool // tokens whose end was handled before their begin
	progSignal chan struct{}   // closed and replaced when one ends

	// Guarded by Manager.mu.
	active      int
	idleGen     int
	idleTimer   *time.Timer
	registered  bool // the manager owns it; its exit counts as a crash
	exitHandled bool // the manager has seen it exit
}

// document is a file the server has open, as last sent to it.
type document struct {
	uri     uri.URI
	version int32
	modTime time.Time
	size    int64
	lines   [][]byte
	// sentSeq is the publish count when this version was sent; for servers
	// that publish without versions, a later publish is about this one.
	sentSeq uint64
}

// published is the last diagnostics notification for one file.
type published struct {
	version int32 // 0 when the server sent none
	seq     uint64
	diags   []protocol.Diagnostic
}

// maxDocumentSize bounds what is read and sent to a server for one file.
const maxDocumentSize = 16 << 20

// pipeConn joins the server's stdout and stdin into the one stream jsonrpc2
// wants. Closing it closes both, which also unblocks a pending read.
type pipeConn struct {
	r    *os.File // server's stdout
	w    *os.File // server's stdin
	once sync.Once
}

func (p *pipeConn) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeConn) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeConn) Close() error {
	p.once.Do(func() {
		p.w.Close()
		p.r.Close()
	})
	return nil
}

// tailWriter keeps the last bytes a server wrote to stderr for error
// messages, and logs each line at debug level.
type tailWriter struct {
	mu      sync.Mutex
	buf     []byte
	partial []byte
	log     *slog.Logger
}

const stderrTail = 2048

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > stderrTail {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-stderrTail:]...)
	}
	t.partial = append(t.partial, b...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.log.Debug("language server stderr", "line", string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > stderrTail {
		t.partial = t.partial[:0]
	}
	return len(b), nil
}

// tail returns the last stderrTail bytes written.
func (t *tailWriter) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// lastLine returns the last non-empty line written, for error messages.
func (t *tailWriter) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return lastLine(string(t.buf))
}

// startServer starts the server of t and runs the initialize handshake.
// onExit runs once the process is gone, whatever the reason.
func startServer(ctx context.Context, sp *spawner, cfg *Config, t Target, onExit func(*server)) (*server, error) {
	lang := cfg.Languages[t.Language]
	log := cfg.Logger.With("language", t.Language, "root", t.Root)
	rootFS, err := os.OpenRoot(t.Root)
	if err != nil {
		return nil, fmt.Errorf("open project root: %w", err)
	}
	s := &server{
		target:     t,
		lang:       lang,
		cfg:        cfg,
		log:        log,
		rootFS:     rootFS,
		roots:      []string{t.Root},
		stderr:     &tailWriter{log: log},
		exited:     make(chan struct{}),
		docs:       map[string]*document{},
		diags:      map[string]published{},
		diagSignal: make(chan struct{}),
		progress:   map[string]bool{},
		endedFirst: map[string]bool{},
		warmSem:    make(chan struct{}, 1),
		progSignal: make(chan struct{}),
	}
	if real, err := filepath.EvalSymlinks(t.Root); err == nil && real != t.Root {
		s.roots = append(s.roots, real)
	}

	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		rootFS.Close()
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		rootFS.Close()
		stdinR.Close()
		stdinW.Close()
		return nil, err
	}
	s.pipes = &pipeConn{r: stdoutR, w: stdinW}

	args := make([]string, len(lang.Args))
	for i, a := range lang.Args {
		args[i] = strings.ReplaceAll(a, rootVar, t.Root)
	}
	cmd := exec.Command(lang.Command, args...)
	cmd.Dir = t.Root
	cmd.Env = append(os.Environ(), lang.Env...)
	cmd.Stdin = stdinR
	cmd.Stdout = stdoutW
	cmd.Stderr = s.stderr
	cmd.SysProcAttr = sysProcAttr()
	// Stderr is copied by a goroutine that Wait joins; should anything the
	// server left behind keep the pipe open, don't wait for it forever.
	cmd.WaitDelay = cfg.ShutdownGrace
	s.cmd = cmd

	err = sp.start(cmd)
	// The child has its own copies of these ends now.
	stdinR.Close()
	stdoutW.Close()
	if err != nil {
		s.pipes.Close()
		rootFS.Close()
		return nil, fmt.Errorf("start %s: %w", lang.Command, err)
	}
	s.pid = cmd.Process.Pid
	if s.group, err = adopt(cmd); err != nil {
		_ = cmd.Wait() // adopt killed it
		s.pipes.Close()
		rootFS.Close()
		return nil, fmt.Errorf("start %s: %w", lang.Command, err)
	}
	s.started = time.Now()
	log.Info("language server started", "command", lang.Command, "pid", s.pid)

	_, conn, rpc := protocol.NewClient(context.Background(), client{s: s}, jsonrpc2.NewHeaderStream(s.pipes))
	s.conn, s.rpc = conn, rpc
	go s.watch(onExit)

	if err := s.initialize(ctx); err != nil {
		s.stop(0)
		return nil, err
	}
	return s, nil
}

// watch reaps the process, cleans up after it and reports its exit.
func (s *server) watch(onExit func(*server)) {
	err := awaitExit(s.cmd, s.group)
	if err == nil {
		err = errors.New("exited")
	}
	s.exitErr = err
	// The process and its group are gone: nothing can answer any more.
	s.pipes.Close()
	s.conn.Close()
	s.rootFS.Close()
	if s.stopping.Load() {
		s.log.Info("language server stopped", "pid", s.pid)
	} else {
		s.log.Warn("language server died", "pid", s.pid, "err", err, "stderr", s.stderr.lastLine())
	}
	// onExit (the manager counting the crash against the breaker) runs
	// before exited is closed: a query that saw the crash through exited
	// returns only after it is counted, so the next query already sees an
	// open breaker instead of racing the bookkeeping.
	onExit(s)
	close(s.exited)
}

// dead reports whether the process has exited.
func (s *server) dead() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// exitError describes why the server exited, with its last stderr line.
func (s *server) exitError() error {
	msg := fmt.Sprintf("language server %s for %s exited: %v", s.lang.Command, s.target.Language, s.exitErr)
	if line := s.stderr.lastLine(); line != "" {
		msg += ": " + line
	}
	return errors.New(msg)
}

func (s *server) initialize(ctx context.Context) error {
	pid := int32(os.Getpid())
	rootURI := uri.File(s.target.Root)
	t, f := true, false
	params := &protocol.InitializeParams{
		ProcessID:  &pid,
		ClientInfo: protocol.ClientInfo{Name: "warden"},
		RootURI:    &rootURI,
		RootPath:   protocol.NewNullable(s.target.Root),
		WorkspaceFoldersInitializeParams: protocol.WorkspaceFoldersInitializeParams{
			WorkspaceFolders: protocol.NewNullable([]protocol.WorkspaceFolder{{URI: rootURI, Name: filepath.Base(s.target.Root)}}),
		},
		Capabilities: protocol.ClientCapabilities{
			General: &protocol.GeneralClientCapabilities{
				PositionEncodings: []protocol.PositionEncodingKind{protocol.PositionEncodingKindUTF8, protocol.PositionEncodingKindUTF16},
			},
			TextDocument: &protocol.TextDocumentClientCapabilities{
				Synchronization: &protocol.TextDocumentSyncClientCapabilities{DynamicRegistration: &f},
				DocumentSymbol:  &protocol.DocumentSymbolClientCapabilities{HierarchicalDocumentSymbolSupport: &t},
				Hover:           &protocol.HoverClientCapabilities{ContentFormat: []protocol.MarkupKind{protocol.MarkupKindPlainText, protocol.MarkupKindMarkdown}},
				PublishDiagnostics: &protocol.PublishDiagnosticsClientCapabilities{
					DiagnosticsCapabilities: protocol.DiagnosticsCapabilities{RelatedInformation: &t},
					VersionSupport:          &t,
				},
			},
			Workspace: &protocol.WorkspaceClientCapabilities{WorkspaceFolders: &t},
			// Servers that load a project in the background (pyright,
			// tsserver, rust-analyzer) say when they are done.
			Window: &protocol.WindowClientCapabilities{WorkDoneProgress: &t},
		},
	}
	if len(s.lang.InitializationOptions) > 0 {
		params.InitializationOptions = protocol.LSPAny(withRoot(s.lang.InitializationOptions, s.target.Root))
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	res, err := s.rpc.Initialize(ctx, params)
	if err != nil {
		return s.describe("initialize", ctx, err)
	}
	s.encoding = protocol.PositionEncodingKindUTF16
	switch res.Capabilities.PositionEncoding {
	case protocol.PositionEncodingKindUTF8, protocol.PositionEncodingKindUTF32:
		s.encoding = res.Capabilities.PositionEncoding
	}
	if err := s.rpc.Initialized(ctx, &protocol.InitializedParams{}); err != nil {
		return s.describe("initialized", ctx, err)
	}
	return nil
}

// describe turns the failure of a request into an error naming the server
// and the cause: the process died, the deadline passed, or it answered an
// error.
func (s *server) describe(method string, ctx context.Context, err error) error {
	var answered *jsonrpc2.Error
	if s.dead() || (!errors.As(err, &answered) && ctx.Err() == nil) {
		// Not an answer from the server and not our own deadline: the
		// connection broke (EOF, a closed pipe), because the process is
		// going away. Wait briefly for the reaper, so that the error says
		// why and the manager sees a crash it may retry.
		select {
		case <-s.exited:
			return s.exitError()
		case <-time.After(s.cfg.ShutdownGrace):
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("language server %s for %s did not answer %s in time", s.lang.Command, s.target.Language, method)
	}
	return fmt.Errorf("language server %s for %s: %s: %w", s.lang.Command, s.target.Language, method, err)
}

// stop ends the server: shutdown and exit, then after grace (or at once
// when grace is 0) the process group is killed. It returns once the process
// is reaped.
func (s *server) stop(grace time.Duration) {
	s.stopping.Store(true)
	if grace > 0 && !s.dead() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		// A busy server (gopls loading its workspace) may answer shutdown
		// late or never: grace bounds the whole goodbye.
		if err := s.rpc.Shutdown(ctx); err == nil {
			_ = s.rpc.Exit(ctx)
		}
		select {
		case <-s.exited:
		case <-ctx.Done():
		}
		cancel()
	}
	_ = s.group.kill()
	<-s.exited
}

// uriOf returns the URI of a project-relative path.
func (s *server) uriOf(rel string) uri.URI {
	return uri.File(filepath.Join(s.target.Root, filepath.FromSlash(rel)))
}

// relOf returns the project-relative, slash-separated path of a file URI,
// or false when the file is outside the project root.
func (s *server) relOf(u uri.URI) (string, bool) {
	if !u.IsFile() {
		return "", false
	}
	p := u.FsPath()
	for _, root := range s.roots {
		rel, err := filepath.Rel(root, p)
		if err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

// sync makes the server's copy of rel match the file on disk: didOpen the
// first time, a full-content didChange when its size or mtime changed, and
// didClose when it is gone.
func (s *server) sync(ctx context.Context, rel string) (*document, error) {
	s.docMu.Lock()
	defer s.docMu.Unlock()
	doc := s.docs[rel]

	f, err := s.rootFS.Open(filepath.FromSlash(rel))
	if err != nil {
		if doc != nil {
			delete(s.docs, rel)
			_ = s.rpc.DidClose(ctx, &protocol.DidCloseTextDocumentParams{TextDocument: protocol.TextDocumentIdentifier{URI: doc.uri}})
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, errNotFound(rel)
		}
		return nil, fmt.Errorf("open %s: %w", rel, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", rel, err)
	}
	if !info.Mode().IsRegular() {
		return nil, errNotRegular(rel)
	}
	if info.Size() > maxDocumentSize {
		return nil, errTooLarge(rel, info.Size())
	}
	if doc != nil && doc.size == info.Size() && doc.modTime.Equal(info.ModTime()) {
		return doc, nil
	}
	content, err := io.ReadAll(io.LimitReader(f, maxDocumentSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	next := &document{uri: s.uriOf(rel), version: 1, modTime: info.ModTime(), size: info.Size(), lines: splitLines(content)}
	s.diagMu.Lock()
	next.sentSeq = s.diagSeq
	s.diagMu.Unlock()
	if doc == nil {
		err = s.rpc.DidOpen(ctx, &protocol.DidOpenTextDocumentParams{TextDocument: protocol.TextDocumentItem{
			URI: next.uri, LanguageID: protocol.LanguageKind(s.cfg.languageID(s.target.Language, rel)), Version: next.version, Text: string(content),
		}})
	} else {
		next.version = doc.version + 1
		err = s.rpc.DidChange(ctx, &protocol.DidChangeTextDocumentParams{
			TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: next.uri}, Version: next.version},
			ContentChanges: []protocol.TextDocumentContentChangeEvent{&protocol.TextDocumentContentChangeWholeDocument{Text: string(content)}},
		})
	}
	if err != nil {
		// The server may have seen part of it; forget the document so
		// the next query opens it afresh.
		delete(s.docs, rel)
		return nil, s.describe("didOpen", ctx, err)
	}
	s.docs[rel] = next
	return next, nil
}

// publish records a publishDiagnostics notification.
func (s *server) publish(p *protocol.PublishDiagnosticsParams) {
	rel, ok := s.relOf(p.URI)
	if !ok {
		return
	}
	version, _ := p.Version.Get()
	s.diagMu.Lock()
	defer s.diagMu.Unlock()
	s.diagSeq++
	s.diags[rel] = published{version: version, seq: s.diagSeq, diags: p.Diagnostics}
	close(s.diagSignal)
	s.diagSignal = make(chan struct{})
}

// client answers what a server asks of warden. warden edits nothing and
// shows nothing: it only listens for diagnostics.
type client struct {
	protocol.UnimplementedClient
	s *server
}

func (c client) PublishDiagnostics(_ context.Context, p *protocol.PublishDiagnosticsParams) error {
	c.s.publish(p)
	return nil
}

// Progress tracks the server's work-done progress: a query that finds
// nothing while the server still loads the project waits for it.
func (c client) Progress(_ context.Context, p *protocol.ProgressParams) error {
	var v struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(p.Value, &v) != nil {
		return nil
	}
	c.s.log.Debug("language server progress", "token", p.Token, "kind", v.Kind)
	c.s.trackProgress(fmt.Sprint(p.Token), v.Kind)
	return nil
}

func (c client) LogMessage(_ context.Context, p *protocol.LogMessageParams) error {
	c.s.log.Debug("language server log", "message", p.Message)
	return nil
}

func (c client) Configuration(_ context.Context, p *protocol.ConfigurationParams) ([]protocol.LSPAny, error) {
	out := make([]protocol.LSPAny, len(p.Items))
	for i := range out {
		out[i] = protocol.LSPAny("null")
	}
	return out, nil
}

func (c client) RegisterCapability(context.Context, *protocol.RegistrationParams) error { return nil }

func (c client) WorkDoneProgressCreate(context.Context, *protocol.WorkDoneProgressCreateParams) error {
	return nil
}

func (c client) WorkspaceFolders(context.Context) ([]protocol.WorkspaceFolder, error) {
	return []protocol.WorkspaceFolder{{URI: uri.File(c.s.target.Root), Name: filepath.Base(c.s.target.Root)}}, nil
}

func (c client) ShowMessageRequest(context.Context, *protocol.ShowMessageRequestParams) (*protocol.MessageActionItem, error) {
	return nil, nil
}

func (c client) ApplyEdit(context.Context, *protocol.ApplyWorkspaceEditParams) (*protocol.ApplyWorkspaceEditResult, error) {
	reason := "warden is a read-only client"
	return &protocol.ApplyWorkspaceEditResult{Applied: false, FailureReason: &reason}, nil
}

// rootVar in a language's Args and InitializationOptions stands for the
// project root.
const rootVar = "${root}"

// withRoot replaces rootVar in the strings of a JSON document by root.
func withRoot(doc json.RawMessage, root string) json.RawMessage {
	quoted, _ := json.Marshal(root)
	return json.RawMessage(strings.ReplaceAll(string(doc), rootVar, string(quoted[1:len(quoted)-1])))
}

// trackProgress records a $/progress notification of kind begin, report or
// end.
func (s *server) trackProgress(token, kind string) {
	s.progMu.Lock()
	defer s.progMu.Unlock()
	switch kind {
	case "begin":
		if s.endedFirst[token] {
			// Its end was handled first: notifications are handled
			// concurrently, so a short piece of work can arrive inverted.
			delete(s.endedFirst, token)
			return
		}
		s.progress[token] = true
	case "end":
		if s.progress[token] {
			delete(s.progress, token)
		} else if len(s.endedFirst) < maxEndedFirst {
			s.endedFirst[token] = true
		}
		close(s.progSignal)
		s.progSignal = make(chan struct{})
	}
}

// maxEndedFirst bounds the tokens remembered as ended before their begin
// was handled (a server that sends ends of unknown tokens cannot grow it).
const maxEndedFirst = 256

// loading returns whether the server reports work in progress, and a
// channel closed when some of it ends.
func (s *server) loading() (bool, <-chan struct{}) {
	s.progMu.Lock()
	defer s.progMu.Unlock()
	return len(s.progress) > 0, s.progSignal
}
