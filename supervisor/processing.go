package supervisor

import (
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// processing turns the models' preprocess and postprocess sections into
// what prep workers are told (worker.Spec.Processing). Models with neither,
// or with kind: tensor and no postprocess, are left out: they are served
// tensor in, tensor out.
func processing(c *config.Config) []worker.Processing {
	var ps []worker.Processing
	for _, m := range c.Models {
		p := worker.Processing{Model: m.Name}
		if pre := m.Preprocess; pre != nil && pre.Kind == config.KindImage {
			settings := pre.Settings
			p.Image = &settings
		}
		if post := m.Postprocess; post != nil {
			p.Classify = &worker.Classify{Output: post.Output, Labels: post.Labels, Softmax: post.Softmax, TopK: post.TopK}
		}
		if p.Image != nil || p.Classify != nil {
			ps = append(ps, p)
		}
	}
	return ps
}
