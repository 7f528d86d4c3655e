# A 2x2 subplots grid: a histogram, line formats, a scatter and bars (compare with matplotlib).
import os
import numpy as np
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

out = os.environ.get('PLOT_OUT', '/tmp')
x = np.linspace(0, 2 * np.pi, 50)
samples = np.sin(np.arange(500) * 0.37) + np.cos(np.arange(500) * 0.11)
fig, axes = plt.subplots(2, 2, figsize=(8, 6))
n, bins, patches = axes[0, 0].hist(samples, bins=20, density=True, color='C1', alpha=0.7)
axes[0, 0].set_title('hist')
axes[0, 1].plot(x, np.sin(x), 'r--o', markersize=3, label='sin')
axes[0, 1].plot(x, np.cos(x), color='#2ca02c', lw=2, label='cos')
axes[0, 1].legend(loc='lower left')
axes[0, 1].grid(True)
axes[1, 0].scatter(np.cos(x), np.sin(2 * x), s=20, c='purple')
axes[1, 0].set_xlabel('cos')
axes[1, 0].set_ylabel('sin 2x')
axes[1, 1].bar(['a', 'b', 'c', 'd'], [3, 7, 2, 5], color='C0')
axes[1, 1].axhline(4, color='k', ls=':')
fig.suptitle('Four plots')
fig.tight_layout()
fig.savefig(os.path.join(out, 'grid_hist.png'), dpi=80)
print(round(float(n.sum() * (bins[1] - bins[0])), 6), patches)
