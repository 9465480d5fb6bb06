package daemon

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"watchdog/config"
)

// NewLogger builds the daemon's zap logger from the config's log section:
// JSON for journald and files, console on a terminal, unless log.format
// says otherwise. The returned level is what a reload changes.
func NewLogger(l config.Log) (*zap.Logger, zap.AtomicLevel, error) {
	return newLogger(l, os.Stderr, "stderr")
}

// newLogger is NewLogger writing to out, whose file is stderr (what the
// terminal and journal checks look at).
func newLogger(l config.Log, stderr *os.File, out string) (*zap.Logger, zap.AtomicLevel, error) {
	level, err := zapcore.ParseLevel(l.Level)
	if err != nil {
		return nil, zap.AtomicLevel{}, fmt.Errorf("log.level: %w", err)
	}
	format := l.Format
	if format == "" {
		format = "json"
		if isTTY(stderr) {
			format = "console"
		}
	}
	var zc zap.Config
	if format == "console" {
		zc = zap.NewDevelopmentConfig()
	} else {
		zc = zap.NewProductionConfig()
		zc.EncoderConfig.TimeKey = "ts"
		zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	}
	// Error means "a human should look", not a bug: no stack trace burying
	// the one sentence that says what to do.
	zc.DisableStacktrace = true
	// No sampling: a mass death is exactly when every line must reach the journal.
	zc.Sampling = nil
	zc.Level = zap.NewAtomicLevelAt(level)
	zc.OutputPaths = []string{out}
	zc.ErrorOutputPaths = []string{out}
	if journalStream(stderr) {
		// An sd-daemon(3) prefix makes zap's level the journal's priority.
		registerPriorityEncoders()
		zc.Encoding = priorityPrefix + zc.Encoding
	}
	log, err := zc.Build(zap.AddStacktrace(zapcore.DPanicLevel))
	return log, zc.Level, err
}

func isTTY(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// journalStream reports whether f is the journal's stream: JOURNAL_STREAM's
// device and inode must match, as a redirected child inherits the variable.
func journalStream(f *os.File) bool {
	dev, ino, ok := strings.Cut(os.Getenv("JOURNAL_STREAM"), ":")
	if !ok {
		return false
	}
	d, err1 := strconv.ParseUint(dev, 10, 64)
	i, err2 := strconv.ParseUint(ino, 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return uint64(st.Dev) == d && uint64(st.Ino) == i
}

// priorityPrefix names the encoders that prefix each line with its
// syslog priority.
const priorityPrefix = "sd-priority-"

var registerOnce sync.Once

// registerPriorityEncoders registers the wrapped encoders once per process
// (zap's registry is global).
func registerPriorityEncoders() {
	registerOnce.Do(func() {
		for name, mk := range map[string]func(zapcore.EncoderConfig) zapcore.Encoder{
			"json": zapcore.NewJSONEncoder, "console": zapcore.NewConsoleEncoder,
		} {
			_ = zap.RegisterEncoder(priorityPrefix+name, func(c zapcore.EncoderConfig) (zapcore.Encoder, error) {
				return priorityEncoder{mk(c)}, nil
			}) // only fails for a name taken, and the Once takes it once
		}
	})
}

// priorityEncoder writes sd-daemon(3)'s "<N>" before each entry, which
// journald reads and strips.
type priorityEncoder struct{ zapcore.Encoder }

var priorityPool = buffer.NewPool()

// Clone keeps the wrapper on clones.
func (e priorityEncoder) Clone() zapcore.Encoder { return priorityEncoder{e.Encoder.Clone()} }

// EncodeEntry encodes the entry and puts its priority first.
func (e priorityEncoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	b, err := e.Encoder.EncodeEntry(ent, fields)
	if err != nil {
		return b, err
	}
	out := priorityPool.Get()
	out.AppendByte('<')
	out.AppendInt(int64(syslogPriority(ent.Level)))
	out.AppendByte('>')
	_, _ = out.Write(b.Bytes()) // a buffer's Write cannot fail
	b.Free()
	return out, nil
}

// syslogPriority maps a zap level to sd-daemon(3)'s priorities.
func syslogPriority(l zapcore.Level) int {
	switch {
	case l <= zapcore.DebugLevel:
		return 7
	case l == zapcore.InfoLevel:
		return 6
	case l == zapcore.WarnLevel:
		return 4
	case l == zapcore.ErrorLevel:
		return 3
	default:
		return 2
	}
}
