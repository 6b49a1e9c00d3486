/* One tethered Langevin chain, written once for float and double.
 * Included by chain.c with REAL (float/double) and SFX (f32/f64) defined.
 * The update is the sampler's (lib/core/sampler.h). */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* Measurement at theta_m into the traces; returns non-zero to stop. */
static int CAT(measure_, SFX)(sivei_run *run, sivei_work *w, sivei_pcg32 *rng,
                              int32_t c, int64_t m)
{
    sivei_chain_out *out = sivei_chain(run->r, c);
    double *lbar = out->trace[SIVE_TRACE_LBAR], *s2 = out->trace[SIVE_TRACE_S2];
    if (m % run->opt.eval_stride != 0) {
        lbar[m] = s2[m] = NAN;
        return 0;
    }
    int rc = sivei_evaluate(run, w, rng, w->theta, c, m);
    if (rc) {
        out->status = SIVE_CHAIN_CALLBACK;
        sivei_run_fail(run, SIVE_E_CALLBACK, rc,
                       "evaluation callback returned %d at chain %d step %lld",
                       rc, (int)c, (long long)m);
        return 1;
    }
    sivei_mean_var(w->group_loss, (size_t)run->opt.groups, &lbar[m], &s2[m]);
    sivei_evaluators_offset(run, &lbar[m]); /* E[Lbar | theta] = L_n(theta) */
    if (!isfinite(lbar[m]) || !isfinite(s2[m])) {
        out->status = SIVE_CHAIN_DIVERGED;
        out->trace[SIVE_TRACE_DISP][m] = out->trace[SIVE_TRACE_GRAD_NORM][m] =
            out->trace[SIVE_TRACE_GRAD_LOSS][m] = NAN;
        return 1;
    }
    if ((rc = sivei_evaluators_observe(run, w, w->theta, c, m))) {
        out->status = SIVE_CHAIN_CALLBACK;
        sivei_run_fail(run, SIVE_E_CALLBACK, rc,
                       "evaluation view's callback returned %d at chain %d step %lld", rc,
                       (int)c, (long long)m);
        return 1;
    }
    return 0;
}

/* Gradient at theta_m; returns non-zero to stop. */
static int CAT(gradient_, SFX)(sivei_run *run, sivei_work *w, sivei_pcg32 *rng,
                               int32_t c, int64_t m, double *loss)
{
    if (sivei_samplers_cached(run, w, loss))
        return 0;
    draw_grad_indices(run, w, rng);
    sive_batch gb = {.index = run->model.n_examples ? w->grad_idx : NULL,
                     .n_groups = 1, .group_size = (size_t)run->opt.grad_batch,
                     .chain = c, .worker = w->worker, .step = m};
    gb.seed = sivei_pcg32_next64(&rng[SIVEI_STREAM_GRAD_CB]);
    *loss = NAN;
    sivei_clear_error();
    int rc = run->model.grad(w->theta, run->model.dim, &gb, w->grad, loss,
                             run->model.user);
    if (!rc)
        rc = sivei_samplers_gradient(run, w, &gb);
    if (rc) {
        sivei_chain(run->r, c)->status = SIVE_CHAIN_CALLBACK;
        sivei_run_fail(run, SIVE_E_CALLBACK, rc,
                       "gradient callback returned %d at chain %d step %lld", rc,
                       (int)c, (long long)m);
    }
    return rc;
}

/* Should the chain stop before step m (another chain failed, or the
 * progress callback cancels)? */
static int CAT(stopped_, SFX)(sivei_run *run, int32_t c, int64_t m, sivei_clock *k)
{
    const int64_t M = run->opt.steps, every = M / 1000 > 0 ? M / 1000 : 1;
    if (atomic_load_explicit(&run->stop, memory_order_relaxed))
        return 1;
    if (run->progress && sivei_progress_due(k, m, every)) {
        int pr = run->progress(c, m, M, run->progress_user);
        if (pr) {
            sivei_run_fail(run, SIVE_E_CANCELLED, 0,
                           "cancelled by the progress callback (code %d) at chain %d step %lld",
                           pr, (int)c, (long long)m);
            return 1;
        }
    }
    return 0;
}

void CAT(sivei_chain_run_, SFX)(sivei_run *run, sivei_work *w, int32_t c)
{
    sivei_chain_out *out = sivei_chain(run->r, c);
    const size_t d = run->model.dim;
    const int64_t M = run->opt.steps;
    sivei_pcg32 rng[SIVEI_STREAM_COUNT];
    for (int k = 0; k < SIVEI_STREAM_COUNT; k++)
        sivei_pcg32_stream(&rng[k], run->opt.seed, (uint64_t)c, (uint64_t)k);
    if (w->perm_grad)
        for (uint64_t i = 0; i < run->model.n_examples; i++)
            w->perm_grad[i] = w->perm_eval[i] = (uint32_t)i;
    memcpy(w->theta, run->theta_star, d * sizeof(REAL));
    /* A callback that leaves outputs unwritten then sees zeros, the same
     * for every chain and thread count, never a previous chain's values or
     * uninitialised memory. */
    memset(w->grad, 0, d * sizeof(REAL));
    memset(w->group_loss, 0, (size_t)run->opt.groups * sizeof(double));
    sivei_samplers_chain_start(w, c);
    sivei_evaluators_chain_start(w, c);
    sivei_clock clk = {0};
    out->status = SIVE_CHAIN_OK;
    int64_t m = 0;
    for (; m < M; m++) {
        if (CAT(stopped_, SFX)(run, c, m, &clk)) {
            out->status = SIVE_CHAIN_ABORTED;
            break;
        }
        if (CAT(measure_, SFX)(run, w, rng, c, m) ||
            CAT(gradient_, SFX)(run, w, rng, c, m, &out->trace[SIVE_TRACE_GRAD_LOSS][m]))
            break;
        w->t_step = sivei_anneal_t(&run->opt, c, m);
        w->eta_step = sivei_anneal_eta(&run->opt, run->eta, w->t_step);
        if (sivei_samplers_step(run, w, &rng[SIVEI_STREAM_NOISE], m,
                                &out->trace[SIVE_TRACE_GRAD_NORM][m],
                                &out->trace[SIVE_TRACE_DISP][m])) {
            if (out->status == SIVE_CHAIN_OK) /* not a callback error in the step */
                out->status = SIVE_CHAIN_DIVERGED;
            break;
        }
    }
    /* A diverged step keeps its (non-finite) trace entries for inspection;
     * a step cut short by a callback error or an abort is dropped. */
    out->stop_step = out->status == SIVE_CHAIN_OK ? M : m;
    out->steps_run = out->status == SIVE_CHAIN_DIVERGED ? m + 1 : m;
    if (out->status == SIVE_CHAIN_OK && run->progress)
        run->progress(c, M, M, run->progress_user);
}

#undef CAT
#undef CAT_
