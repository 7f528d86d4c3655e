# Hidden spines, an axvspan and an axhspan, a MultipleLocator and a PercentFormatter, a grey
# background and figure-level labels (compare with matplotlib).
import os
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker

out = os.environ.get('PLOT_OUT', '/tmp')
fig, ax = plt.subplots(figsize=(6, 4))
xs = [i / 10 for i in range(101)]
ax.plot(xs, [(x / 10) ** 2 for x in xs], label='share')
ax.axvspan(2, 4, color='orange', alpha=0.3)
ax.axhspan(0.6, 0.8, xmin=0.5, xmax=1.0, color='green', alpha=0.2)
ax.spines[['top', 'right']].set_visible(False)
ax.set_facecolor('#f4f4f4')
ax.xaxis.set_major_locator(mticker.MultipleLocator(2.5))
ax.xaxis.set_minor_locator(mticker.AutoMinorLocator())
ax.yaxis.set_major_formatter(mticker.PercentFormatter(1.0))
ax.text(0.02, 0.95, 'transAxes', transform=ax.transAxes, va='top')
fig.supxlabel('time (s)')
fig.supylabel('share')
fig.savefig(os.path.join(out, 'spines_span_ticker.png'), dpi=80)
print(ax.get_xticks(), [t.get_text() for t in ax.get_yticklabels()])
