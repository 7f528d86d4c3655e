# A scatter coloured by an array through a colormap, with a colorbar.
import os
import numpy as np
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

out = os.environ.get('PLOT_OUT', '/tmp')
t = np.linspace(0, 4 * np.pi, 120)
plt.figure(figsize=(6, 4.5))
sc = plt.scatter(t * np.cos(t), t * np.sin(t), c=t, cmap='viridis', s=15 + 3 * t)
plt.colorbar(sc, label='t')
plt.title('spiral')
plt.savefig(os.path.join(out, 'scatter_colorbar.png'), dpi=80)
