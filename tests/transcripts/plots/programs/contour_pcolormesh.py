# Filled and line contours with labels and a colorbar, beside a pcolormesh (nearest shading).
import os
import numpy as np
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

out = os.environ.get('PLOT_OUT', '/tmp')
x = np.linspace(-3, 3, 41)
y = np.linspace(-2, 2, 31)
X, Y = np.meshgrid(x, y)
Z = np.exp(-X**2 - Y**2) - 0.6 * np.exp(-(X - 1.5)**2 - (Y + 0.5)**2)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
cf = ax1.contourf(X, Y, Z, levels=8, cmap='viridis')
cs = ax1.contour(X, Y, Z, levels=cf.levels, colors='k', linewidths=0.8)
ax1.clabel(cs, fontsize=8)
fig.colorbar(cf, ax=ax1)
ax1.set_title('contourf + contour')
m = ax2.pcolormesh(x[::4], y[::4], Z[::4, ::4], cmap='plasma', shading='nearest')
fig.colorbar(m, ax=ax2)
ax2.set_title('pcolormesh')
fig.savefig(os.path.join(out, 'contour_pcolormesh.png'), dpi=80)
