"""The state-size sweep's protocol: the bytes each mixer keeps, a job's model and command; and the records the
sweep's other tests build on (`_rec`, `_cells`)."""
import pytest

from k3lite.analytic import memory
from k3lite.experiments.lab import LabModel
from k3lite.experiments import lab_state_jobs as protocol
from k3lite.experiments.lab_state_jobs import Job, state_bytes


def _rec(mixer, K, lr, seed, acc, loss=1.0, init="lab", wall_s=10.0, evals=None, solved=False):
    job = {"mixer": mixer, "head_dim": K, "lr": lr, "seed": seed, "init": init}
    return {"job": job, "final_eval_acc": acc, "final_eval_loss": loss, "wall_s": wall_s, "solved": solved,
            "evals": evals or {"step": [1000, 1500, 2000], "acc": [acc, acc, acc]}, "steps_done": 2000}


def _cells(table):
    """{(mixer, K): [acc per seed]} -> records with seed 0 best at lr 1e-2 (the LR grid) and every seed there."""
    runs = []
    for (mixer, K), accs in table.items():
        runs += [_rec(mixer, K, lr, 0, accs[0] - 0.2, loss=2.0) for lr in protocol.LRS if lr != 1e-2]
        runs += [_rec(mixer, K, 1e-2, s, a) for s, a in enumerate(accs)]
    return runs


def test_state_bytes_are_the_layers_memory():
    """A recurrent layer's H x K x K fp32 state (the KDA cache's state, no conv tail); attention's KV cache at T."""
    assert state_bytes("kda", 16) == 2 * 16 * 16 * 4 == memory.kda_state_bytes(2, 16, conv_size=0)
    assert state_bytes("attention", 16) == 2 * 128 * 2 * 16 * 4
    with pytest.raises(ValueError, match="mixer must be one of"):
        state_bytes("rnn", 16)


def test_a_job_builds_the_model_whose_state_it_counts():
    job = Job("gdn", 8, 1e-2, 0)
    cfg = job.config()
    assert (cfg.seq_len, cfg.num_pairs, cfg.head_dim, cfg.n_heads) == (128, 32, 8, 2) and cfg.steps == protocol.STEPS
    model = LabModel(cfg)
    assert model.mixers[0].head_dim == 8
    assert job.command == "python -m k3lite.experiments.lab_state run --mixer gdn --head-dim 8 --lr 0.01 --seed 0"
    assert Job("kda", 16, 1e-2, 1, "reference").command.endswith("--seed 1 --init reference")
