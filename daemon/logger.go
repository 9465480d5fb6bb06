package daemon

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"watchdog/config"
)

// NewLogger builds the daemon's zap logger from the config's log section:
// JSON for journald and files, console on a terminal, unless log.format
// says otherwise. The level it returns changes the logger's level on a
// reload.
func NewLogger(l config.Log) (*zap.Logger, zap.AtomicLevel, error) {
	level, err := zapcore.ParseLevel(l.Level)
	if err != nil {
		return nil, zap.AtomicLevel{}, fmt.Errorf("log.level: %w", err)
	}
	format := l.Format
	if format == "" {
		format = "json"
		if isTTY(os.Stderr) {
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
	// An error-level line means "a human should look" (a store failure, a
	// refused reload), not "the program is broken": a Go stack trace there
	// buries the one sentence that says what to do. Stacks stay for the
	// programmer-error levels.
	zc.DisableStacktrace = true
	zc.Level = zap.NewAtomicLevelAt(level)
	zc.OutputPaths = []string{"stderr"}
	zc.ErrorOutputPaths = []string{"stderr"}
	log, err := zc.Build(zap.AddStacktrace(zapcore.DPanicLevel))
	return log, zc.Level, err
}

// isTTY reports whether f is a terminal (a TCGETS ioctl succeeds).
func isTTY(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
