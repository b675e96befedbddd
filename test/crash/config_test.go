package crash_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"
)

// config holds the figures of a run. The default is bounded to a few
// minutes of CI time on 2 cores; APIARY_CRASH_FULL=1 takes the sizes of
// issue 14 (200 workspaces over 10 clusters, a Colony of 20, 20 kills per
// mode, 100 hang cycles), and each APIARY_CRASH_* variable overrides one
// figure.
type config struct {
	seed uint64
	// workspaces are spread over clusters, which are the first entries of
	// a Colony of colony clusters.
	workspaces, clusters, colony int
	// kills and gitKills are the SIGKILLs of the direct and the Git test.
	kills, gitKills int
	// gitWorkspaces and gitColony size the Git test's fleet.
	gitWorkspaces, gitColony int
	// gitShardKills are the SIGKILLs of the Git test with two shards,
	// whose fleets share gitWorkspaces and gitColony.
	gitShardKills int
	// apiWorkspaces are rolled out across the API server's restart.
	apiWorkspaces int
	// hangCycles are the cycles of hanging and garbage children.
	hangCycles int
}

func (c config) String() string {
	return fmt.Sprintf("direct: %d workspaces over %d clusters, Colony of %d, %d kills; git: %d workspaces, Colony of %d, %d kills (%d with 2 shards); "+
		"API server restart: %d workspaces; %d hang cycles",
		c.workspaces, c.clusters, c.colony, c.kills, c.gitWorkspaces, c.gitColony, c.gitKills, c.gitShardKills, c.apiWorkspaces, c.hangCycles)
}

func loadConfig() config {
	c := config{
		seed:       uint64(time.Now().UnixNano()),
		workspaces: 60, clusters: 10, colony: 20, kills: 20,
		gitWorkspaces: 12, gitColony: 4, gitKills: 20, gitShardKills: 12,
		apiWorkspaces: 20,
		hangCycles:    10,
	}
	if os.Getenv("APIARY_CRASH_FULL") != "" {
		c.workspaces, c.gitWorkspaces, c.gitColony, c.apiWorkspaces, c.hangCycles = 200, 40, 10, 60, 100
	}
	for name, p := range map[string]*int{
		"APIARY_CRASH_WORKSPACES":      &c.workspaces,
		"APIARY_CRASH_CLUSTERS":        &c.clusters,
		"APIARY_CRASH_COLONY":          &c.colony,
		"APIARY_CRASH_KILLS":           &c.kills,
		"APIARY_CRASH_GIT_KILLS":       &c.gitKills,
		"APIARY_CRASH_GIT_SHARD_KILLS": &c.gitShardKills,
		"APIARY_CRASH_GIT_WORKSPACES":  &c.gitWorkspaces,
		"APIARY_CRASH_GIT_COLONY":      &c.gitColony,
		"APIARY_CRASH_API_WORKSPACES":  &c.apiWorkspaces,
		"APIARY_CRASH_HANG_CYCLES":     &c.hangCycles,
	} {
		if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
			*p = v
		}
	}
	if v, err := strconv.ParseUint(os.Getenv("APIARY_CRASH_SEED"), 10, 64); err == nil {
		c.seed = v
	}
	c.colony = max(c.colony, c.clusters)
	return c
}

// rng is a seeded source shared by a test's goroutines.
type rng struct {
	mu sync.Mutex
	r  *rand.Rand
}

// newRNG derives a test's source from the run's seed and the test's own
// stream, so that tests draw the same numbers whichever of them run.
func newRNG(stream uint64) *rng {
	return &rng{r: rand.New(rand.NewPCG(cfg.seed, stream))}
}

func (r *rng) intN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.IntN(n)
}

// between returns a duration in [lo, hi).
func (r *rng) between(lo, hi time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return lo + time.Duration(r.r.Int64N(int64(hi-lo)))
}

// perm returns a permutation of [0, n).
func (r *rng) perm(n int) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Perm(n)
}
