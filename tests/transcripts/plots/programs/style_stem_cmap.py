# The ggplot style (background, white grid, its colour cycle) with a stem plot, and an image on
# a ListedColormap with a colorbar from a ScalarMappable (compare with matplotlib).
import os
import numpy as np
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
from matplotlib import cm, colors

out = os.environ.get('PLOT_OUT', '/tmp')
plt.style.use('ggplot')
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 4))
x = np.arange(8)
ax1.plot(x, np.sqrt(x), label='sqrt')
ax1.stem(x, np.sin(x), bottom=0)
ax1.legend()
img = np.arange(20.0).reshape(4, 5)
cmap = colors.ListedColormap(['#440154', '#3b528b', '#21918c', '#5ec962', '#fde725'])
ax2.imshow(img, cmap=cmap)
norm = colors.Normalize(vmin=0, vmax=19)
fig.colorbar(cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax2)
fig.savefig(os.path.join(out, 'style_stem_cmap.png'), dpi=80)
plt.style.use('default')
print(cm.viridis(0.5), norm(9.5), cmap(0.5))
