package lsp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The test binary doubles as a proxy in front of a real language server
// (WARDEN_LSP_PROXY_EXEC), so that a test can make a real server crash or
// hang at an exact point: when warden's request with a given method
// arrives. It runs from init, before TestMain, so that it needs nothing
// from the package's other test modes.
func init() {
	if cmd := os.Getenv("WARDEN_LSP_PROXY_EXEC"); cmd != "" {
		os.Exit(runProxy(cmd, os.Getenv("WARDEN_LSP_PROXY_ARGS"), os.Getenv("WARDEN_LSP_PROXY_DIR")))
	}
}

// proxyLanguage runs the real server command with args behind the proxy,
// controlled through the files in dir (see armCrash and armHang).
func proxyLanguage(l Language, dir string) Language {
	args, _ := json.Marshal(l.Args)
	l.Env = append(append([]string(nil), l.Env...),
		"WARDEN_LSP_PROXY_EXEC="+l.Command, "WARDEN_LSP_PROXY_ARGS="+string(args), "WARDEN_LSP_PROXY_DIR="+dir)
	l.Command, l.Args = os.Args[0], []string{"-test.run=^$"}
	return l
}

// armCrash makes the next n requests named method kill the server (and
// the proxy) instead of reaching it.
func armCrash(dir, method string, n int) error {
	return os.WriteFile(filepath.Join(dir, "crash"), fmt.Appendf(nil, "%s %d", method, n), 0o644)
}

// armHang makes the next request named method vanish: the server never
// sees it, so it never answers. The proxy notes it in dir/hung.
func armHang(dir, method string) error {
	return os.WriteFile(filepath.Join(dir, "hang"), []byte(method), 0o644)
}

func runProxy(command, argsJSON, dir string) int {
	var args []string
	json.Unmarshal([]byte(argsJSON), &args)
	cmd := exec.Command(command, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		return 1
	}
	exited := make(chan int, 1)
	go func() {
		cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()
	frames := make(chan []byte)
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			frame, err := readFrame(r)
			if err != nil {
				close(frames)
				return
			}
			frames <- frame
		}
	}()
	for {
		select {
		case code := <-exited:
			return code
		case frame, ok := <-frames:
			if !ok {
				in.Close()
				return <-exited
			}
			var msg struct {
				Method string `json:"method"`
			}
			body := frame[strings.Index(string(frame), "\r\n\r\n")+4:]
			json.Unmarshal(body, &msg)
			if proxyCrashes(dir, msg.Method) {
				fmt.Fprintf(os.Stderr, "proxy: killed %s on %s\n", filepath.Base(command), msg.Method)
				cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				return 9
			}
			if proxyHangs(dir, msg.Method) {
				os.WriteFile(filepath.Join(dir, "hung"), []byte(msg.Method), 0o644)
				continue
			}
			if _, err := in.Write(frame); err != nil {
				return <-exited
			}
		}
	}
}

// proxyCrashes consumes one crash armed for method.
func proxyCrashes(dir, method string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "crash"))
	if err != nil {
		return false
	}
	m, count, _ := strings.Cut(string(b), " ")
	n, _ := strconv.Atoi(count)
	if m != method || n <= 0 {
		return false
	}
	os.WriteFile(filepath.Join(dir, "crash"), fmt.Appendf(nil, "%s %d", m, n-1), 0o644)
	return true
}

// proxyHangs consumes the hang armed for method.
func proxyHangs(dir, method string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "hang"))
	if err != nil || string(b) != method {
		return false
	}
	os.Remove(filepath.Join(dir, "hang"))
	return true
}

// readFrame reads one LSP message, headers and body, as sent.
func readFrame(r *bufio.Reader) ([]byte, error) {
	tp := textproto.NewReader(r)
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(hdr.Get("Content-Length"))
	if err != nil {
		return nil, fmt.Errorf("bad Content-Length: %w", err)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	var head strings.Builder
	for k, vs := range hdr {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	head.WriteString("\r\n")
	return append([]byte(head.String()), body...), nil
}
