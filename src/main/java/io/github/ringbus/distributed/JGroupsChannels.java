package io.github.ringbus.distributed;

import org.axonframework.common.AxonConfigurationException;
import org.jgroups.JChannel;
import org.jgroups.protocols.BARRIER;
import org.jgroups.protocols.FD_ALL;
import org.jgroups.protocols.FD_SOCK;
import org.jgroups.protocols.FRAG2;
import org.jgroups.protocols.MERGE3;
import org.jgroups.protocols.MFC;
import org.jgroups.protocols.TCP;
import org.jgroups.protocols.TCPPING;
import org.jgroups.protocols.UNICAST3;
import org.jgroups.protocols.VERIFY_SUSPECT;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.protocols.pbcast.NAKACK2;
import org.jgroups.protocols.pbcast.STABLE;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * The JGroups channel a node uses unless the application gives its own: JGroups' own TCP stack ({@code tcp.xml} of
 * JGroups 4.2) with a static list of nodes ({@code TCPPING}), failure detection by socket ({@code FD_SOCK}: a killed
 * process is suspected as soon as its connections close) and by heartbeat ({@code FD_ALL}: a hung one after the
 * failure detection timeout).
 */
final class JGroupsChannels {

    private JGroupsChannels() {
    }

    static JChannel tcp(DistributedRingCommandBus.Builder settings) {
        long timeout = settings.failureDetectionTimeout().toMillis();
        try {
            InetAddress bindAddress = InetAddress.getByName(settings.bindAddress());
            List<InetSocketAddress> hosts = new ArrayList<>();
            for (InetSocketAddress host : settings.initialHosts()) {
                hosts.add(new InetSocketAddress(host.getHostString(), host.getPort()));
            }
            return new JChannel(
                    new TCP().setValue("bind_addr", bindAddress)
                             .setValue("bind_port", settings.bindPort())
                             .setValue("port_range", 0),
                    new TCPPING().setInitialHosts(hosts).setPortRange(0),
                    new MERGE3().setMinInterval(2_000).setMaxInterval(5_000),
                    new FD_SOCK(),
                    new FD_ALL().setValue("timeout", timeout).setValue("interval", Math.max(100, timeout / 3)),
                    new VERIFY_SUSPECT().setTimeout(Math.min(500, timeout)),
                    new BARRIER(),
                    new NAKACK2().setUseMcastXmit(false),
                    new UNICAST3(),
                    new STABLE(),
                    new GMS().setJoinTimeout(2_000).setPrintLocalAddr(false),
                    new MFC(),
                    new FRAG2());
        } catch (Exception e) {
            throw new AxonConfigurationException(
                    "DistributedRingCommandBus: could not build the JGroups TCP channel on " + settings.bindAddress()
                            + ":" + settings.bindPort() + ": " + e.getMessage(), e);
        }
    }
}
