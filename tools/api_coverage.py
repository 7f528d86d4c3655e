"""How much of the NumPy / PyTorch / MXNet surface that tutorials and the book use devarray has.

    python3 tools/api_coverage.py DEVARRAY [--only numpy|torch|mxnet|matplotlib] [--real-python PY]

For each group (numpy functions, numpy.linalg, numpy.random, torch functions, Tensor
methods, torch.nn.functional, torch.nn, torch.optim, mxnet.np, matplotlib's pyplot, Axes and
Figure, ...) it asks devarray which of the listed names exist (`hasattr`) and prints `present/listed` and the missing names.
With --real-python (a Python with the real frameworks), names the real module lacks are
reported too, so the lists stay honest. The lists are the names programs commonly use, not
whole modules; add to them as programs show more. A report, not a test: exit status 0.
"""
import argparse
import json
import subprocess
import sys

GROUPS = {
    "numpy": ("import numpy as m", """
abs absolute add all allclose amax amin any append arange arccos arcsin arctan arctan2
argmax argmin argpartition argsort argwhere around array array2string array_equal
array_repr array_split asarray atleast_1d atleast_2d average bincount broadcast_arrays
broadcast_to ceil clip column_stack concatenate convolve copy corrcoef cos cosh
count_nonzero cov cross cumprod cumsum deg2rad degrees delete diag diagonal diff digitize
divide dot dsplit dstack einsum empty empty_like equal errstate exp exp2 expand_dims expm1
eye fabs finfo flatnonzero flip fliplr flipud floor floor_divide fmax fmin frombuffer
fromfunction full full_like genfromtxt get_printoptions gradient greater hsplit hstack
histogram histogram2d hypot identity iinfo indices inner insert interp intersect1d isclose
isfinite isin isinf isnan isscalar kron less lexsort linspace load loadtxt log log10 log1p
log2 logical_and logical_not logical_or logspace matmul max maximum mean median meshgrid
min minimum mod moveaxis multiply nan_to_num nanmax nanmean nanmin nansum ndim negative
nonzero not_equal ones ones_like outer pad partition percentile piecewise poly1d polyfit
polyval power printoptions prod ptp quantile rad2deg radians ravel reciprocal repeat
reshape resize roll rollaxis rot90 round save savetxt savez savez_compressed searchsorted
select set_printoptions seterr setdiff1d shape sign sin sinh size sort split sqrt square
squeeze stack std subtract sum swapaxes take take_along_axis tan tanh tensordot tile trace
transpose trapz tril triu true_divide trunc union1d unique unravel_index vander var vdot
vsplit vstack where zeros zeros_like float32 float64 int32 int64 uint8 bool_ newaxis pi e
inf nan"""),
    "numpy.linalg": ("import numpy as _n; m = _n.linalg", """
solve lstsq eig eigh eigvals svd qr cholesky pinv matrix_rank slogdet det inv norm
matrix_power multi_dot"""),
    "numpy.random": ("import numpy as _n; m = _n.random", """
default_rng seed rand randn randint random normal uniform choice shuffle permutation
binomial poisson exponential beta gamma multinomial standard_normal RandomState"""),
    "torch": ("import torch as m", """
abs acos add addmm all allclose amax amin any arange argmax argmin argsort argwhere
as_tensor asin atan atan2 baddbmm bernoulli bmm broadcast_to bucketize cat cdist ceil
chunk clamp clip clone column_stack cos cosh count_nonzero cov cross cummax cumprod cumsum
deg2rad diag diag_embed diagonal diff digamma dist div dot dsplit dstack einsum empty
empty_like eq erf exp expm1 eye flatten flip fliplr flipud floor fmod frac from_numpy full
full_like gather ge gt hstack histc hypot index_select inner inverse isclose isfinite isinf
isnan kron kthvalue le lerp linspace log log10 log1p log2 logaddexp logical_and
logical_not logical_or logspace logsumexp lt manual_seed masked_fill masked_select matmul
max maximum mean median meshgrid min minimum mm mode movedim mul multinomial mv nan_to_num
nanmean nansum narrow ne neg nonzero norm normal numel ones ones_like outer permute pow
prod quantile rand rand_like randint randn randn_like randperm ravel reciprocal remainder
repeat_interleave reshape roll rot90 round rsqrt scatter scatter_add searchsorted select
sigmoid sign sin sinh softmax sort split sqrt square squeeze stack std sub sum swapaxes t
take take_along_dim tan tanh tensor tensordot tile topk trace transpose trapezoid tril
tril_indices triu triu_indices true_divide trunc unbind unique unsqueeze var vstack where
zeros zeros_like no_grad enable_grad set_grad_enabled is_tensor save load device dtype
float32 float64 int64 int32 long float bool uint8 float16 bfloat16 cuda backends"""),
    "torch.Tensor": ("import torch as _t; m = _t.ones(2, 3)", """
abs add add_ addmm all any argmax argsort backward bmm chunk clamp clamp_ clone contiguous
copy_ cpu cuda cumsum detach diag dim div div_ double eq exp expand expand_as fill_ flatten
flip float gather ge gt half index_select int is_contiguous item le log long lt masked_fill
masked_fill_ matmul max mean min mm mul mul_ narrow ne neg new_ones new_zeros new_tensor
nonzero norm numel numpy permute pow prod relu repeat reshape reshape_as round scatter
scatter_ sigmoid sign size softmax sort split sqrt squeeze std sub sub_ sum t tanh to
tolist topk transpose type type_as unbind unfold uniform_ normal_ unique unsqueeze view
view_as where zero_ requires_grad_ register_hook retain_grad"""),
    "torch.nn.functional": ("import torch.nn.functional as m", """
relu leaky_relu gelu silu elu softplus sigmoid tanh softmax log_softmax cross_entropy
nll_loss mse_loss l1_loss smooth_l1_loss binary_cross_entropy
binary_cross_entropy_with_logits kl_div dropout linear conv1d conv2d max_pool2d avg_pool2d
adaptive_avg_pool2d adaptive_max_pool2d batch_norm layer_norm embedding one_hot pad
interpolate normalize cosine_similarity pairwise_distance unfold fold grid_sample"""),
    "torch.nn": ("from torch import nn as m", """
Linear Conv1d Conv2d ConvTranspose2d MaxPool2d AvgPool2d AdaptiveAvgPool2d BatchNorm1d
BatchNorm2d LayerNorm GroupNorm Dropout Embedding LSTM GRU RNN Transformer
TransformerEncoder TransformerEncoderLayer MultiheadAttention ReLU LeakyReLU GELU SiLU
Sigmoid Tanh Softmax LogSoftmax Flatten Unflatten Identity Sequential ModuleList
ModuleDict ParameterList Parameter CrossEntropyLoss MSELoss L1Loss BCELoss
BCEWithLogitsLoss NLLLoss SmoothL1Loss HuberLoss KLDivLoss Upsample"""),
    "torch.optim": ("import torch.optim as m", """
SGD Adam AdamW RMSprop Adagrad Adadelta lr_scheduler"""),
    "mxnet.np": ("from mxnet import np as m", """
abs add all any arange argmax argmin argsort array broadcast_to ceil clip concatenate cos
cumsum diag dot einsum exp expand_dims eye flip floor full linspace log max maximum mean
meshgrid min minimum moveaxis multiply ones ones_like prod random repeat reshape round sign
sin sort split sqrt square squeeze stack std sum swapaxes tanh tile transpose tril unique
var where zeros zeros_like"""),
    "mxnet.nd": ("from mxnet import nd as m", """
abs add arange argmax argsort array broadcast_axis broadcast_to clip concat cumsum dot exp
expand_dims flip full linspace log max maximum mean min minimum ones ones_like one_hot pick
prod random relu reshape shape_array sigmoid slice slice_axis softmax sort split sqrt
square squeeze stack sum swapaxes take tanh tile topk transpose waitall where zeros
zeros_like"""),
    # matplotlib as the pyplot tutorial, "Quick start", d2l's plotting and the PyTorch and
    # MXNet tutorials use it (the real one needs `matplotlib.use('Agg')` first: no display).
    "matplotlib": ("import matplotlib as m; m.use('Agg'); import matplotlib.pyplot", """
rcParams use colors cm ticker pyplot rc rcdefaults __version__"""),
    "matplotlib.pyplot": ("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as m", """
figure subplots subplot plot scatter bar barh hist imshow matshow colorbar errorbar
fill_between axhline axvline axhspan axvspan text annotate legend grid xlim ylim xscale
yscale xticks yticks xlabel ylabel title suptitle tight_layout subplots_adjust savefig show
close gcf gca clf cla twinx axis semilogy semilogx loglog step stem pie boxplot contour
contourf pcolormesh figtext tick_params margins get_fignums ion ioff pause draw rcParams
style get_cmap colormaps"""),
    "matplotlib Axes": ("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as _p; m = _p.subplots()[1]", """
plot scatter bar barh hist imshow matshow errorbar fill_between axhline axvline axhspan
axvspan text annotate legend grid set_xlim set_ylim get_xlim get_ylim set_xscale set_yscale
get_xscale get_yscale set_xticks set_yticks get_xticks get_yticks set_xticklabels
set_yticklabels get_xticklabels get_yticklabels set_xlabel set_ylabel set_title get_xlabel
get_ylabel get_title set_aspect axis twinx twiny cla clear set tick_params invert_xaxis
invert_yaxis get_legend get_lines semilogy semilogx loglog step stem pie boxplot contour
contourf pcolormesh margins set_axis_off set_axis_on label_outer set_facecolor get_figure
figure xaxis yaxis spines transAxes transData lines"""),
    "matplotlib Figure": ("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as _p; m = _p.figure()", """
add_subplot add_axes subplots savefig suptitle supxlabel supylabel tight_layout colorbar
set_size_inches get_size_inches set_figwidth set_figheight get_figwidth get_figheight
set_dpi get_dpi dpi number axes get_axes gca sca clf clear show subplots_adjust text legend
canvas delaxes"""),
    "matplotlib.colors / cm / ticker": ("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot\nclass _All:\n    def __getattr__(self, n):\n        import matplotlib\n        mod, _, name = n.partition('.')\n        return getattr(getattr(matplotlib, mod), name)\nm = _All()", """
colors.to_rgba colors.to_rgb colors.to_hex colors.Normalize colors.LogNorm
colors.ListedColormap colors.LinearSegmentedColormap cm.viridis cm.gray cm.jet
cm.ScalarMappable ticker.MaxNLocator ticker.MultipleLocator ticker.FixedLocator
ticker.NullLocator ticker.LogLocator ticker.AutoMinorLocator ticker.FuncFormatter
ticker.FormatStrFormatter ticker.ScalarFormatter ticker.PercentFormatter
ticker.NullFormatter"""),
}


PROBE = """
import json
out = {}
for group, (setup, names) in GROUPS.items():
    try:
        ns = {}
        exec(setup, ns)
        m = ns['m']
        out[group] = [n for n in names if not hasattr(m, n)]
    except Exception as e:
        out[group] = 'cannot import: ' + type(e).__name__ + ': ' + str(e)
print('COVERAGE' + json.dumps(out))
"""


def probe(command, groups):
    listed = {g: (s, n.split()) for g, (s, n) in groups.items()}
    program = 'GROUPS = ' + repr(listed) + '\n' + PROBE
    done = subprocess.run(command + ['-c', program], capture_output=True, text=True,
                          timeout=600)
    for line in done.stdout.splitlines():
        if line.startswith('COVERAGE'):
            return json.loads(line[len('COVERAGE'):])
    raise SystemExit('the probe printed no result:\n' + done.stdout[-2000:] +
                     done.stderr[-2000:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('devarray')
    ap.add_argument('--only', help='groups whose name starts with this')
    ap.add_argument('--real-python', help='a Python with the real frameworks, to check the lists')
    args = ap.parse_args()
    groups = {g: v for g, v in GROUPS.items() if not args.only or g.startswith(args.only)}
    mine = probe([args.devarray], groups)
    real = probe([args.real_python], groups) if args.real_python else {}
    total = present = 0
    for group, (_, names) in groups.items():
        names = names.split()
        missing = mine[group]
        if isinstance(missing, str):
            print(f'{group}: {missing}')
            continue
        total += len(names)
        present += len(names) - len(missing)
        print(f'{group}: {len(names) - len(missing)}/{len(names)}'
              + (f"; missing: {' '.join(missing)}" if missing else ''))
        if isinstance(real.get(group), list) and real[group]:
            print(f"  (the real module lacks: {' '.join(real[group])})")
    print(f'{present}/{total} listed names present')


if __name__ == '__main__':
    sys.exit(main())
