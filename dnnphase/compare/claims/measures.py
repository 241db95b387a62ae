"""The spring–block paper's supplement S4: its two separation measures side by side (Fig. S10),
the linear networks where they part (Fig. S11 c, d), and the main text's claim that the theory
generalises He & Su's law of equi-separation.

The rules below were written down before any of the numbers they judge were computed, and are
not changed afterwards.

**S10, "these two metrics produce comparable results"** — per committed network diagram that
holds both measures: the seed-mean phase label (scale-free curvature, band ±0.05) of the trace
ratio (paper Eq. 3) and of the fuzziness (Eq. 9) in every cell, their agreement a (fraction of
cells where both labels exist and are equal) and Cohen's κ. **holds** when a ≥ 0.8 and κ ≥ 0.6;
**differs** when a < 0.6 or κ < 0.4; **partly** otherwise. Where κ is undefined (both measures
give one and the same label everywhere) a alone decides. The Spearman ρ of the two seed-mean
curvatures over cells is reported beside them and decides nothing. Intervals: 95 % over 400
resamples of the seed indices (drawn with replacement, the same draw for every cell and both
measures: a seed is one network, measured twice).

**Fig. S11 (c, d), "the behaviour of the two metrics notably diverges for linear networks"** —
the linear network of Fig. 5(a) in its three settings (small lr, large lr, dropout). A setting
*diverges* when the two measures' seed-mean phase labels differ, or when the fuzziness's
seed-mean load curve is flat (|D_0 − D_L| < 0.1 max_ℓ |D_ℓ|) while the trace ratio's is not.
**holds** when all three settings diverge; **partly** when one or two do; **differs** when none
does.

**Main text, "these findings considerably generalise" He & Su's law** — two readings of the same
curves pick one cell per nonlinearity row: the spring–block reading, the cell whose seed-mean
scale-free curvature of the trace ratio is nearest 0 (the most linear load curve); He & Su's
reading, the cell whose seed-mean Pearson r of the fuzziness curve against the layer index is
nearest −1 (equi-separation; the fuzziness curve is already log Tr(Σ_w Σ_b⁺), so it is
correlated as it is). A row is a hit for a reading when its cell is among the row's best-accuracy
cells (the same tie rule as :mod:`dnnphase.compare.claims.rules`). Over the four diagrams of the
paper preset, with k_c and k_r the hits of the two readings and Δ = k_c − k_r with its paired
interval (the same seed draws for both readings): **holds** when Δ > 0 and the interval's lower
end is above 0 (the spring–block reading picks the best cell more often); **differs** when
Δ < 0 and the interval's upper end is below 0; **partly** otherwise (the seeds cannot tell the
two readings apart).
"""

__all__: list[str] = []
