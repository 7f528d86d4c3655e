# Error bars, a step line, an annotation with an arrow and a twin y axis.
import os
import numpy as np
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

out = os.environ.get('PLOT_OUT', '/tmp')
x = np.arange(1, 8)
y = x ** 1.5
fig, ax = plt.subplots(figsize=(6, 4))
ax.errorbar(x, y, yerr=0.1 * y + 0.5, fmt='o-', capsize=3, label='measured')
ax.step(x, y * 0.6, where='mid', label='step')
ax.annotate('peak', xy=(7, y[-1]), xytext=(4, 17), arrowprops=dict(arrowstyle='->'))
ax.set_xlabel('x')
ax.set_ylabel('y')
ax.legend(loc='upper left')
ax2 = ax.twinx()
ax2.plot(x, 100 / x, 'g:', label='rate')
ax2.set_ylabel('rate')
fig.tight_layout()
fig.savefig(os.path.join(out, 'errorbar_twinx.png'), dpi=80)
