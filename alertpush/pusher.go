package alertpush

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"watchdog/attention"
	"watchdog/internal/deadline"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
)

// Source is what the pusher reads: the live view (*live.View is one).
type Source interface {
	// Attention is the queue as the API serves it.
	Attention(q attention.Query, now time.Time) attention.Queue
	// Get is one entity with its derived state.
	Get(typ, id string, now time.Time) (live.Entry, bool)
}

// Config is what the pusher needs of the config file, and this host.
type Config struct {
	// URLs are the Alertmanager base URLs; each gets every alert.
	URLs []string
	// ResendEvery is how often firing alerts are resent; 0 means DefaultResendEvery.
	ResendEvery time.Duration
	// Timeout bounds one request. 0 means DefaultTimeout.
	Timeout time.Duration
	// RunbookURL is the runbook_url annotation's base; empty leaves it out.
	RunbookURL string
	// Host labels host-less entities' alerts and selects those resolved at start.
	Host string
	// Owns keeps the entities this daemon speaks for in a fleet; nil pushes all.
	Owns func(store.Entity) bool
	// CheckEvery, when positive, is how often the queue is compared besides the
	// kicks; zero when the store reports each commit, so an idle pusher only resends.
	CheckEvery time.Duration
}

// Defaults of Config.
const (
	DefaultResendEvery = time.Minute
	DefaultTimeout     = 10 * time.Second
)

// Bounds and paces; variables so that tests can shorten them.
var (
	// maxAlerts is the most firing alerts one state carries.
	maxAlerts = 10000
	// maxResolving is the most resolutions one Alertmanager keeps waiting.
	maxResolving = 10000
	// backoffMin and backoffMax bound the jittered, doubling retry delay.
	backoffMin = 500 * time.Millisecond
	backoffMax = 30 * time.Second
)

// Pusher pushes the queue's critical and warning items to every configured
// Alertmanager. Run it in a goroutine of its own.
type Pusher struct {
	cfg           Config
	src           Source
	log           *zap.Logger
	metrics       *Metrics
	now           func() time.Time
	alertmanagers []*alertmanager
	kick          chan struct{}

	// firing is what the last offer held, by key: the producer's own.
	firing map[string]Alert
}

// New makes a pusher of cfg reading src; metrics and log may be nil.
func New(cfg Config, src Source, metrics *Metrics, log *zap.Logger) *Pusher {
	if cfg.ResendEvery <= 0 {
		cfg.ResendEvery = DefaultResendEvery
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if log == nil {
		log = zap.NewNop()
	}
	p := &Pusher{cfg: cfg, src: src, log: log, metrics: metrics, now: time.Now, kick: make(chan struct{}, 1), firing: map[string]Alert{}}
	for _, u := range cfg.URLs {
		p.alertmanagers = append(p.alertmanagers, newAlertmanager(strings.TrimRight(u, "/"), cfg, metrics, log.With(zap.String("alertmanager", Redacted(u)))))
	}
	return p
}

// Kick asks for a prompt look at the queue; it never blocks.
func (p *Pusher) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run pushes until ctx ends: at once, on a Kick that changed the queue, and
// every ResendEvery. Nothing is resolved at shutdown: endsAt ends them.
func (p *Pusher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, t := range p.alertmanagers {
		wg.Go(func() { t.run(ctx) })
	}
	defer wg.Wait()
	// Alarms on the shared clock (ADR-0055); check only with CheckEvery.
	check, resend := deadline.Shared().Signal(), deadline.Shared().Signal()
	defer check.Stop()
	defer resend.Stop()
	if p.cfg.CheckEvery > 0 {
		check.Set(p.cfg.CheckEvery)
	}
	resend.Set(p.cfg.ResendEvery)
	p.offer(true)
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
			p.offer(false)
		case <-check.C:
			p.offer(false)
			check.Set(p.cfg.CheckEvery)
		case <-resend.C:
			p.offer(true)
			resend.Set(p.cfg.ResendEvery)
		}
	}
}

// offer hands the senders the firing and resolved alerts, when changed or forced.
func (p *Pusher) offer(force bool) {
	now := p.now()
	firing, over := p.Snapshot(now)
	p.metrics.drop(DropOverflow, over)
	var resolved []Alert
	for k, a := range p.firing {
		if _, ok := firing[k]; !ok {
			a.EndsAt = now
			resolved = append(resolved, a)
		}
	}
	changed := len(resolved) > 0 || len(firing) != len(p.firing)
	for k, a := range firing {
		if old, ok := p.firing[k]; !ok || !old.StartsAt.Equal(a.StartsAt) {
			changed = true
		}
	}
	p.firing = firing
	if !changed && !force {
		return
	}
	list := make([]Alert, 0, len(firing))
	for _, a := range firing {
		list = append(list, a)
	}
	for _, t := range p.alertmanagers {
		t.offer(list, resolved)
	}
}

// Snapshot is the queue's firing alerts at now, by key, and how many items
// past maxAlerts were left out.
func (p *Pusher) Snapshot(now time.Time) (map[string]Alert, int) {
	q := p.src.Attention(attention.Query{Severities: []state.Severity{state.SeverityCritical, state.SeverityWarning}, Limit: maxAlerts}, now)
	out := make(map[string]Alert, len(q.Items))
	for _, it := range q.Items {
		if !Pushed(it.Severity) {
			continue
		}
		e, ok := p.src.Get(it.Entity.Type, it.Entity.ID, now)
		if !ok || (p.cfg.Owns != nil && !p.cfg.Owns(e.Entity)) {
			continue
		}
		a := AlertOf(it, e, p.cfg.Host, p.cfg.RunbookURL)
		out[a.Key()] = a
	}
	return out, max(q.Total-len(q.Items), 0)
}

// Redacted is raw with its password replaced by "xxxxx": logs must not show basic auth.
func Redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}
