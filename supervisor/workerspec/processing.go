package workerspec

import (
	"encoding/json"

	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// Processing turns the models' preprocess, postprocess and response_cache
// sections into what prep workers are told (worker.Spec.Processing).
// Models with none of them, or with kind: tensor and nothing else, are
// left out: they are served tensor in, tensor out. caches are the
// response cache segments by model (cachesegs.Set.Sync); models are the specs
// whose versions make the cache identities.
func Processing(c *config.Config, models []worker.Model, caches map[string]string) []worker.Processing {
	var ps []worker.Processing
	for i, m := range c.Models {
		p := worker.Processing{Model: m.Name}
		if pre := m.Preprocess; pre != nil && pre.Kind == config.KindImage {
			settings := pre.Settings
			p.Image = &settings
		}
		if post := m.Postprocess; post != nil {
			p.Classify = &worker.Classify{Output: post.Output, Labels: post.Labels, Softmax: post.Softmax, TopK: post.TopK}
		}
		if path, ok := caches[m.Name]; ok && i < len(models) {
			rc := m.ResponseCache
			p.Cache = &worker.ResponseCache{Path: path, TTL: rc.TTL.Duration, Identity: cacheIdentity(m.Name, p),
				Model: models[i].Version, Redis: rc.Redis}
		}
		if p.Image != nil || p.Classify != nil || p.Cache != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// cacheIdentity is what about a model the prep worker decides of its
// answers: its name and its processing settings (labels file contents
// aside: replacing a labels file in place keeps old labelled answers
// until their TTL). The model file's part is its content identity, which
// each answer carries from the infer worker that computed it
// (worker.ResponseCache.Model): not its path, so hosts that hold the same
// weights at different paths share Redis entries, and hosts that hold
// different weights at the same path never do.
func cacheIdentity(name string, p worker.Processing) string {
	settings, _ := json.Marshal(struct {
		Image    *worker.ImageInput
		Classify *worker.Classify
	}{p.Image, p.Classify})
	return name + "\x00" + string(settings)
}
