package daemon

import (
	"sync"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"
)

// notifier speaks sd_notify; without NOTIFY_SOCKET every call is a no-op.
type notifier struct {
	log *zap.Logger
	// interval is half of WatchdogSec; 0 when the watchdog is off.
	interval time.Duration

	mu       sync.Mutex
	lastPing time.Time
}

func newNotifier(log *zap.Logger) *notifier {
	n := &notifier{log: log}
	if d, err := sd.SdWatchdogEnabled(false); err != nil {
		log.Warn("systemd watchdog settings unreadable", zap.Error(err))
	} else if d > 0 {
		n.interval = d / 2
		log.Info("systemd watchdog enabled", zap.Duration("ping_every", n.interval))
	}
	return n
}

func (n *notifier) send(state string) {
	if _, err := sd.SdNotify(false, state); err != nil {
		n.log.Warn("sd_notify", zap.String("state", state), zap.Error(err))
	}
}

func (n *notifier) ready(status string) { n.send(sd.SdNotifyReady + "\nSTATUS=" + status) }

func (n *notifier) stopping() { n.send(sd.SdNotifyStopping + "\nSTATUS=stopping") }

func (n *notifier) reloading() {
	n.send(sd.SdNotifyReloading + "\n" + sd.SdNotifyMonotonicUsec())
}

func (n *notifier) status(s string) { n.send("STATUS=" + s) }

// watchdog feeds systemd's watchdog, at most every half interval; only
// through feedWatchdog, so a wedged loop or unwritable store stops it.
func (n *notifier) watchdog() {
	if n.interval == 0 {
		return
	}
	n.mu.Lock()
	due := time.Since(n.lastPing) >= n.interval/2
	if due {
		n.lastPing = time.Now()
	}
	n.mu.Unlock()
	if due {
		n.send(sd.SdNotifyWatchdog)
	}
}
