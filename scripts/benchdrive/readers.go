package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The readers part (issue 37): readers that never read, each asking for
// the largest list the caps allow, against the daemon's memory. The
// daemon holds -readers-n entities of about 280 KB each (16 KB of
// metadata, 64 lock files of 4,000-byte paths, a 256-byte label); 8
// connections with a 4 KiB receive buffer send GET
// /api/v1/entities?limit=5000 and read nothing for -readers-hold, then
// leave. VmRSS is read before, every 250 ms while they hold (the peak),
// and after they leave until it is back within 10% of before (or
// -readers-settle passes). Targets: peak − before ≤ 256 MB; back within
// 10% within 10 s.

// readerFigures are one binary's figures.
type readerFigures struct {
	bin              string
	beforeKB, peakKB int64
	afterKB          int64         // at the end of the settle wait
	backIn           time.Duration // -1: not back within 10% by then
	listBytes        int           // one whole answer of the list
	connectedReaders int
	firstErr         string
}

// readersFlags are the part's flags.
func readersFlags(fs interface {
	IntVar(p *int, name string, value int, usage string)
	DurationVar(p *time.Duration, name string, value time.Duration, usage string)
	StringVar(p *string, name string, value string, usage string)
}, o *options) {
	fs.IntVar(&o.readersN, "readers-n", 300, "entities of about 280 KB each the readers part registers")
	fs.IntVar(&o.readersConns, "readers-conns", 8, "readers that never read in the readers part")
	fs.DurationVar(&o.readersHold, "readers-hold", 20*time.Second, "how long the readers hold their connections")
	fs.DurationVar(&o.readersSettle, "readers-settle", 30*time.Second, "how long after the readers leave VmRSS is watched")
	fs.StringVar(&o.readersBaseline, "readers-baseline", "", "a second watchdog binary the readers part measures the same way")
}

// checkReaders checks the part's flags.
func checkReaders(o options) error {
	if o.readersN < 1 || o.readersConns < 1 || o.readersHold <= 0 || o.readersSettle <= 0 {
		return errors.New("-readers-n and -readers-conns must be positive, -readers-hold and -readers-settle positive")
	}
	if o.readersBaseline != "" {
		if _, err := os.Stat(o.readersBaseline); err != nil {
			return fmt.Errorf("-readers-baseline: %w", err)
		}
	}
	return nil
}

// readers runs the part for each binary.
func (r *runner) readers(ctx context.Context) error {
	bins := []struct{ tag, bin string }{{"this", r.o.watchdog}}
	if r.o.readersBaseline != "" {
		bins = append(bins, struct{ tag, bin string }{"baseline", r.o.readersBaseline})
	}
	for _, b := range bins {
		say("readers: %s binary, %d entities, %d readers that never read for %s", b.tag, r.o.readersN, r.o.readersConns, r.o.readersHold)
		f, err := r.readersOne(ctx, b.tag, b.bin)
		if err != nil {
			return err
		}
		r.res.readers = append(r.res.readers, f)
	}
	return nil
}

func (r *runner) readersOne(ctx context.Context, tag, bin string) (readerFigures, error) {
	f := readerFigures{bin: tag, backIn: -1}
	w, err := startWatchdogOn(ctx, bin, filepath.Join(r.dir, "readers-"+tag), storeConf{}, time.Minute)
	if err != nil {
		return f, err
	}
	r.live = append(r.live, w.child)
	defer w.stop(10 * time.Second)
	locks := make([]string, 64)
	for i := range locks {
		locks[i] = "/run/locks/" + strings.Repeat("l", 3980) + fmt.Sprintf("-%02d", i)
	}
	meta := map[string]string{"blob": strings.Repeat("m", 16<<10-16)}
	for i := range r.o.readersN {
		doc := map[string]any{"type": "session", "id": fmt.Sprintf("big-%04d", i), "lifecycle": "running",
			"label": strings.Repeat("L", 256), "lock_files": locks, "metadata": meta}
		if err := w.do(ctx, "POST", "/api/v1/entities", doc, nil); err != nil {
			return f, fmt.Errorf("readers: register %d: %w", i, err)
		}
	}
	// One list read whole, for its size; then the memory settles.
	u, err := url.Parse(w.base)
	if err != nil {
		return f, err
	}
	n, err := listBytes(ctx, u.Host)
	if err != nil {
		return f, err
	}
	f.listBytes = n
	if _, _, err := anonAfter(ctx, w.pid(), 5*time.Second); err != nil {
		return f, err
	}
	_, before, err := anonNow(ctx, w.pid())
	if err != nil {
		return f, err
	}
	f.beforeKB, f.peakKB = before, before

	// The readers: connected, the request sent, nothing read.
	var conns []net.Conn
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	for range r.o.readersConns {
		c, err := d.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			if f.firstErr == "" {
				f.firstErr = err.Error()
			}
			continue
		}
		if _, err := io.WriteString(c, "GET /api/v1/entities?limit=5000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil && f.firstErr == "" {
			f.firstErr = err.Error()
		}
		conns = append(conns, c)
	}
	f.connectedReaders = len(conns)
	end := time.Now().Add(r.o.readersHold)
	for time.Now().Before(end) {
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return f, err
		}
		if u, err := readUsage(w.pid()); err == nil {
			f.peakKB = max(f.peakKB, u.rssKB)
		}
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.Close() })
	}
	wg.Wait()
	left := time.Now()
	for time.Since(left) < r.o.readersSettle {
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return f, err
		}
		u, err := readUsage(w.pid())
		if err != nil {
			return f, err
		}
		f.afterKB = u.rssKB
		if f.backIn < 0 && u.rssKB <= before*11/10 {
			f.backIn = time.Since(left)
		}
		if f.backIn >= 0 && time.Since(left) > 2*time.Second {
			break
		}
	}
	return f, nil
}

// listBytes reads GET /api/v1/entities?limit=5000 whole and returns its
// size.
func listBytes(ctx context.Context, host string) (int, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /api/v1/entities?limit=5000 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"); err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, c)
	return int(n), err
}

// printReaders prints the part's table.
func (res *results) printReaders(w io.Writer, o options) {
	if len(res.readers) == 0 {
		return
	}
	fmt.Fprintf(w, "\nreaders: %d entities of about 280 KB; %d connections (SO_RCVBUF 4096) send GET /api/v1/entities?limit=5000 and read nothing for %s, then close;\n"+
		"VmRSS before (median of three), at its peak while they hold (every 250 ms), and after they leave; targets: growth ≤ 256 MB, back within 10%% within 10 s\n",
		o.readersN, o.readersConns, o.readersHold)
	tw := newTable(w)
	fmt.Fprintln(tw, "binary\tlist bytes\treaders\tVmRSS before\tpeak\tgrowth\tafter\tback within 10% in")
	for _, f := range res.readers {
		back := "not within " + o.readersSettle.String()
		if f.backIn >= 0 {
			back = f.backIn.Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f MB\t%.1f MB\t%.1f MB\t%.1f MB\t%s\n", f.bin, f.listBytes, f.connectedReaders,
			float64(f.beforeKB)/1024, float64(f.peakKB)/1024, float64(f.peakKB-f.beforeKB)/1024, float64(f.afterKB)/1024, back)
	}
	tw.Flush() //nolint:errcheck // stdout
	for _, f := range res.readers {
		if f.firstErr != "" {
			fmt.Fprintf(w, "  %s: first failure: %s\n", f.bin, f.firstErr)
		}
	}
}
