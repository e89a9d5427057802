"""The seed's §4.4 multi-objective study of flash attention (Optuna NSGA-II)."""

from __future__ import annotations

from typing import Any

from autotile.kernels import flash_attention_objectives

__all__ = ["flash_attention_study"]


def flash_attention_study(N: int = 4096, d: int = 128, dtype: str = "float16", *,
                          n_trials: int = 60, seed: int = 0) -> Any:
    """Optuna NSGA-II study over :func:`flash_attention_space` with the three objectives.

    Directions: ``["minimize", "minimize", "maximize"]`` for
    ``(hbm_bytes, onchip_bytes, n_programs)``. Configs that break a space
    constraint are pruned.

    Parameters
    ----------
    N, d : int
    dtype : str, default="float16"
    n_trials : int, default=60
    seed : int, default=0
        Seed of the NSGA-II sampler.

    Returns
    -------
    optuna.Study
        ``study.best_trials`` is the front found.

    References
    ----------
    Deb et al., "A fast and elitist multiobjective genetic algorithm:
    NSGA-II", IEEE TEC 6(2), 2002; Optuna ``NSGAIISampler``.
    """
    import optuna

    from autotile.kernels import flash_attention_space

    space = flash_attention_space(N, d, dtype)

    def objective(trial: optuna.Trial) -> tuple[int, int, int]:
        cfg = {k.name: trial.suggest_categorical(k.name, list(k.values))
               for k in space.knobs}
        if not space.is_valid(cfg):
            raise optuna.TrialPruned(", ".join(space.violations(cfg)))
        return flash_attention_objectives(N, d, cfg["BLOCK_M"], cfg["BLOCK_N"], dtype)

    study = optuna.create_study(directions=["minimize", "minimize", "maximize"],
                                sampler=optuna.samplers.NSGAIISampler(seed=seed))
    study.optimize(objective, n_trials=n_trials)
    return study
