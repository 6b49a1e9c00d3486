/* One tethered Langevin chain, written once for float and double.
 * Included by chain.c with REAL (float/double), SFX (f32/f64) and
 * NORMALS (the matching bulk normal sampler) defined, after
 * langevin_update_f32/_f64 (the vectorised update). */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

int CAT(sive_chain_run_, SFX)(sive_run *run, sive_work *w, int32_t c)
{
    const sive_probe *p = run->p;
    const sive_options *o = &p->opt;
    sive_chain_out *out = &run->r->c[c];
    const size_t d = p->dim;
    const int64_t M = o->steps, stride = o->eval_stride;
    const size_t N = (size_t)o->groups;
    const uint64_t n_data = (uint64_t)o->data_size;
    const REAL *star = run->theta_star;
    REAL *theta = w->theta, *g = w->grad, *xi = w->noise;
    double *gl = w->group_loss;

    sive_pcg32 rng[SIVE_STREAM_COUNT];
    for (int k = 0; k < SIVE_STREAM_COUNT; k++)
        sive_pcg32_stream(&rng[k], o->seed, (uint64_t)c, (uint64_t)k);
    if (w->perm)
        for (uint64_t i = 0; i < n_data; i++)
            w->perm[i] = i;

    /* Update coefficients: theta' = theta - a g - (eta/h^2)(theta-theta*) + sqrt(2 eta) xi */
    const REAL a = (REAL)o->base_lr;
    const REAL k_tether = (REAL)(run->eta / (run->h * run->h));
    const REAL k_noise = (REAL)sqrt(2.0 * run->eta);
    const double inv_d = 1.0 / (double)d;

    memcpy(theta, star, d * sizeof(REAL));
    /* A callback that leaves outputs unwritten then sees zeros, the same
     * for every chain and thread count, never a previous chain's values or
     * uninitialised memory. */
    memset(g, 0, d * sizeof(REAL));
    memset(gl, 0, N * sizeof(double));
    sive_batch eb = {.index = n_data ? w->eval_idx : NULL, .n_groups = N,
                     .group_size = (size_t)o->eval_batch, .chain = c};
    sive_batch gb = {.index = n_data ? w->grad_idx : NULL, .n_groups = 1,
                     .group_size = (size_t)o->grad_batch, .chain = c};
    const int64_t every = M / 1000 > 0 ? M / 1000 : 1;
    double *tr_lbar = out->trace[SIVE_TRACE_LBAR], *tr_s2 = out->trace[SIVE_TRACE_S2];
    double *tr_gl = out->trace[SIVE_TRACE_GRAD_LOSS], *tr_gn = out->trace[SIVE_TRACE_GRAD_NORM];
    double *tr_disp = out->trace[SIVE_TRACE_DISP];

    out->status = SIVE_CHAIN_OK;
    int64_t m = 0;
    for (; m < M; m++) {
        if (atomic_load_explicit(&run->stop, memory_order_relaxed)) {
            out->status = SIVE_CHAIN_ABORTED;
            break;
        }
        if (p->progress && m % every == 0) {
            int pr = p->progress(c, m, M, p->progress_user);
            if (pr) {
                out->status = SIVE_CHAIN_ABORTED;
                sive_run_fail(run, SIVE_E_CANCELLED, 0,
                              "cancelled by the progress callback (code %d) at chain %d step %lld",
                              pr, (int)c, (long long)m);
                break;
            }
        }
        /* --- measurement at theta_m --- */
        if (m % stride == 0) {
            if (n_data)
                sive_draw_indices(&rng[SIVE_STREAM_EVAL_IDX], w->eval_idx,
                                  N * (size_t)o->eval_batch, (size_t)o->eval_batch,
                                  n_data, w->perm);
            eb.seed = sive_pcg32_next64(&rng[SIVE_STREAM_EVAL_CB]);
            eb.step = m;
            int rc = p->eval.SFX(theta, d, &eb, gl, p->user);
            if (rc) {
                out->status = SIVE_CHAIN_CALLBACK;
                sive_run_fail(run, SIVE_E_CALLBACK, rc,
                              "evaluation callback returned %d at chain %d step %lld",
                              rc, (int)c, (long long)m);
                break;
            }
            double mean, var;
            sive_mean_var(gl, N, &mean, &var);
            tr_lbar[m] = mean;
            tr_s2[m] = var;
            if (!isfinite(mean) || !isfinite(var)) {
                out->status = SIVE_CHAIN_DIVERGED;
                tr_disp[m] = tr_gn[m] = tr_gl[m] = NAN;
                break;
            }
        } else {
            tr_lbar[m] = NAN;
            tr_s2[m] = NAN;
        }
        /* --- drift --- */
        if (n_data)
            sive_draw_indices(&rng[SIVE_STREAM_GRAD_IDX], w->grad_idx,
                              (size_t)o->grad_batch, (size_t)o->grad_batch, n_data,
                              w->perm);
        gb.seed = sive_pcg32_next64(&rng[SIVE_STREAM_GRAD_CB]);
        gb.step = m;
        double loss = NAN;
        int rc = p->grad.SFX(theta, d, &gb, g, &loss, p->user);
        if (rc) {
            out->status = SIVE_CHAIN_CALLBACK;
            sive_run_fail(run, SIVE_E_CALLBACK, rc,
                          "gradient callback returned %d at chain %d step %lld", rc,
                          (int)c, (long long)m);
            break;
        }
        tr_gl[m] = loss;
        /* --- Langevin step, fused with the trace norms and the finiteness
         *     check (x*0 is NaN exactly when x is not finite) --- */
        double gsum = 0.0, dsum = 0.0;
        int bad = 0;
        for (size_t i0 = 0; i0 < d; i0 += SIVE_NOISE_CHUNK) {
            size_t nb = d - i0 < SIVE_NOISE_CHUNK ? d - i0 : SIVE_NOISE_CHUNK;
            double gs, ds;
            NORMALS(&rng[SIVE_STREAM_NOISE], xi, nb);
            bad |= CAT(langevin_update_, SFX)(theta + i0, star + i0, g + i0, xi, nb, a,
                                              k_tether, k_noise, &gs, &ds);
            gsum += gs;
            dsum += ds;
        }
        tr_gn[m] = sqrt(gsum);
        tr_disp[m] = sqrt(dsum * inv_d);
        if (!isfinite(gsum) || bad) {
            out->status = SIVE_CHAIN_DIVERGED;
            break;
        }
    }
    /* A diverged step keeps its (non-finite) trace entries for inspection;
     * a step cut short by a callback error or an abort is dropped. */
    out->stop_step = out->status == SIVE_CHAIN_OK ? M : m;
    out->steps_run = out->status == SIVE_CHAIN_DIVERGED ? m + 1 : m;
    if (out->status == SIVE_CHAIN_OK && p->progress)
        p->progress(c, M, M, p->progress_user);
    return SIVE_OK;
}

#undef CAT
#undef CAT_
